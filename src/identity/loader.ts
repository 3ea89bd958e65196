import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describeIssues } from '../config/issues.ts';
import type { BackendEntry } from '../config/schema.ts';
import { projectRoot } from '../root.ts';
import type { IdentityBackend, IdentityPlugin, PluginContext } from './contract.ts';

export class PluginLoadError extends Error {}

const pluginsDir = resolve(projectRoot, 'plugins');

/** The built-in backends, imported statically so that the bundle in dist/ carries them. */
const builtIn: Record<string, () => Promise<unknown>> = {
  database: () => import('../../plugins/database/index.ts'),
  ldap: () => import('../../plugins/ldap/index.ts'),
  scim: () => import('../../plugins/scim/index.ts'),
};

/**
 * A TypeScript plugin. Run from its TypeScript sources (tsx, jest), the server loads it as it loads
 * itself; run from the bundle in dist/, it registers tsx first, once, and only when such a plugin is
 * configured: the server pays for no compiler at start.
 */
let typescript: Promise<unknown> | undefined;
async function importTypeScript(url: string): Promise<unknown> {
  if (!import.meta.url.endsWith('.ts')) await (typescript ??= import('tsx/esm/api').then(({ register }) => register()));
  return import(url);
}

/** Finds a plugin: a built-in, a folder under `plugins/`, else an npm package. */
async function importPlugin(name: string): Promise<unknown> {
  if (Object.hasOwn(builtIn, name)) return builtIn[name]!();
  if (/^[a-z0-9][a-z0-9_-]*$/i.test(name)) {
    for (const file of ['index.ts', 'index.js']) {
      const path = resolve(pluginsDir, name, file);
      if (!existsSync(path)) continue;
      return file.endsWith('.ts') ? importTypeScript(pathToFileURL(path).href) : import(pathToFileURL(path).href);
    }
  }
  return import(name);
}

function isPlugin(value: unknown): value is IdentityPlugin {
  const p = value as IdentityPlugin | undefined;
  return !!p && typeof p.create === 'function' && typeof p.configSchema?.safeParse === 'function';
}

/** Loads, validates and builds one backend of the chain; every fault names the backend and plugin. */
export async function loadBackend(entry: BackendEntry, ctx: Omit<PluginContext, 'id'>): Promise<IdentityBackend> {
  const where = `identity backend "${entry.id}" (plugin "${entry.plugin}")`;
  let mod: unknown;
  try {
    mod = await importPlugin(entry.plugin);
  } catch (err) {
    throw new PluginLoadError(`${where}: cannot be loaded: ${(err as Error).message}`);
  }
  const plugin = (mod as { default?: unknown }).default ?? mod;
  if (!isPlugin(plugin)) {
    throw new PluginLoadError(`${where}: does not export a plugin (defineIdentityPlugin({ id, configSchema, create }))`);
  }
  const parsed = plugin.configSchema.safeParse(entry.config ?? {});
  if (!parsed.success) {
    const issues = describeIssues(parsed.error.issues, entry.config, 'config').join('; ');
    throw new PluginLoadError(`${where}: invalid config: ${issues}`);
  }
  try {
    const backend = await plugin.create(parsed.data, { ...ctx, id: entry.id, logger: ctx.logger.child({ backend: entry.id }) });
    if (typeof backend?.checkPassword !== 'function') throw new Error('create() did not return an object with checkPassword()');
    return backend;
  } catch (err) {
    throw new PluginLoadError(`${where}: failed to start: ${(err as Error).message}`);
  }
}
