import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BackendEntry } from '../config/schema.ts';
import type { IdentityBackend, IdentityPlugin, PluginContext } from './contract.ts';

export class PluginLoadError extends Error {}

const pluginsDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../plugins');

/** Finds a plugin: a folder under `plugins/` (built-ins live there too), else an npm package. */
async function importPlugin(name: string): Promise<unknown> {
  if (/^[a-z0-9][a-z0-9_-]*$/i.test(name)) {
    for (const file of ['index.ts', 'index.js']) {
      const path = resolve(pluginsDir, name, file);
      if (existsSync(path)) return import(pathToFileURL(path).href);
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
    const issues = parsed.error.issues.map((i) => `config.${i.path.join('.')}: ${i.message}`).join('; ');
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
