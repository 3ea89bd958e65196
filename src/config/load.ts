import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { describeIssues } from './issues.ts';
import { configSchema, type Config } from './schema.ts';

export class ConfigError extends Error {}

/** Environment variables that override keys of the config file. */
const envKeys: Array<[string, string[]]> = [
  ['PORT', ['port']],
  ['HOST', ['host']],
  ['PUBLIC_URL', ['publicUrl']],
  ['DATABASE_URL', ['databaseUrl']],
  ['LATCHKEY_SECRET', ['secret']],
  ['LOG_LEVEL', ['logLevel']],
  ['TRUST_PROXY', ['trustProxy']],
  ['WORKERS', ['workers']],
  ['METRICS_TOKEN', ['metrics', 'token']],
  ['SMTP_URL', ['smtp', 'url']],
  ['SMTP_FROM', ['smtp', 'from']],
  ['PASSWORD_RESET_ENABLED', ['passwordReset', 'enabled']],
  ['LATCHKEY_ADMIN_USERNAME', ['admin', 'username']],
  ['LATCHKEY_ADMIN_PASSWORD', ['admin', 'password']],
];

function setPath(target: Record<string, unknown>, path: string[], value: string): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function readFile(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const path = env.LATCHKEY_CONFIG ?? './latchkey.config.yaml';
  if (!existsSync(path)) {
    if (env.LATCHKEY_CONFIG) throw new ConfigError(`LATCHKEY_CONFIG: file ${path} does not exist`);
    return {};
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${path}: not valid YAML: ${(err as Error).message}`);
  }
  if (parsed == null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`${path}: must be a mapping`);
  return parsed as Record<string, unknown>;
}

/** Reads the optional YAML file, lays the environment over it, and validates the result. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Record<string, unknown> = {}): Config {
  const raw = { ...readFile(env), ...overrides };
  for (const [name, path] of envKeys) {
    const value = env[name];
    if (value !== undefined && value !== '') setPath(raw, path, value);
  }
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    const lines = describeIssues(result.error.issues, raw).map((line) => `  ${line}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const config = result.data;
  const publicUrl = (config.publicUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
  return { ...config, publicUrl };
}
