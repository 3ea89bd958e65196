import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BenchDatabase } from './database.ts';
import { waitFor200 } from './http.ts';
import { freePort } from '../test/helpers/ports.ts';
import { listeningPid, peakRss, spawnTracked, type Tracked } from './processes.ts';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const ADMIN_PASSWORD = 'bench-admin-password-not-secret';
// The same on every process of one deployment (it encrypts the signing keys at rest).
const SECRET = 'bench-secret-bench-secret-bench-secret-0000';

export interface Latchkey {
  name: string;
  url: string;
  /** The process that listens (node running src/main.ts), not the shell or npm in front of it. */
  serverPid: number;
  /** Spawn to the first 200 from /healthz, in ms. */
  startMs: number;
  /** The environment it runs with: the operator CLI needs the same. */
  env: NodeJS.ProcessEnv;
  process: Tracked;
  peakRss(): number;
  stop(): Promise<void>;
}

function packageScripts(): Record<string, string> {
  return (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
}

/** What npm puts in front of PATH when it runs a script: the project's node_modules/.bin. */
const npmPath = () => [join(REPO, 'node_modules', '.bin'), process.env.PATH ?? ''].join(delimiter);

let built = false;

/**
 * Starts Latchkey exactly as `npm start` would: package.json's start script (read now, so the bench
 * follows whatever it becomes), through `sh -c` as npm runs scripts, but without npm itself in the
 * way of the start-time figure. Untimed before it: the `build` script if there is one (once per
 * bench: a fresh clone's `npm ci` leaves a current build, and the start figure is that of `npm ci &&
 * npm start`, not of a rebuild after an edit), and `prestart` if there is one, as npm would run it.
 */
export async function startLatchkey(options: {
  name: string;
  workDir: string;
  database: BenchDatabase;
  config: Record<string, unknown>;
  log?: (message: string) => void;
  /** More environment for the server (and its CLI), e.g. the OTEL_* variables of the tracing phase. */
  env?: Record<string, string>;
}): Promise<Latchkey> {
  const scripts = packageScripts();
  const start = scripts.start;
  if (!start) throw new Error('package.json has no start script');
  const configFile = join(options.workDir, `${options.name}.config.yaml`);
  writeFileSync(configFile, JSON.stringify(options.config, null, 2)); // JSON is YAML
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: npmPath(),
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: url,
    // warn, as the earlier bench scripts ran it: a log line per request would measure the logger.
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    DATABASE_URL: options.database.url,
    LATCHKEY_CONFIG: configFile,
    LATCHKEY_SECRET: SECRET,
    LATCHKEY_ADMIN_PASSWORD: ADMIN_PASSWORD,
    // BENCH_NODE_OPTIONS=--cpu-prof (for example) profiles the servers, and only them.
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
    ...options.env,
  };
  const npmRun = (script: string) =>
    promisify(execFile)('npm', ['run', '--silent', script], { cwd: REPO, env: { ...env, NODE_OPTIONS: process.env.NODE_OPTIONS } });
  if (scripts.build && !built) {
    options.log?.('  npm run build (untimed)');
    await npmRun('build');
    built = true;
  }
  if (scripts.prestart) await npmRun('prestart');

  const spawnedAt = performance.now();
  const tracked = spawnTracked(`latchkey (${options.name})`, 'sh', ['-c', start], {
    cwd: REPO,
    env,
    logFile: join(options.workDir, `${options.name}.log`),
  });
  let startMs: number;
  try {
    startMs = await waitFor200(`${url}/healthz`, { since: spawnedAt, timeoutMs: 60_000, alive: tracked.running });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- ${tracked.name} log ---\n${tracked.output()}`);
  }
  const serverPid = listeningPid(tracked.pid, port);
  if (!serverPid) throw new Error(`${tracked.name}: no process of its group listens on ${port}`);
  return {
    name: options.name,
    url,
    serverPid,
    startMs,
    env,
    process: tracked,
    peakRss: () => peakRss(serverPid),
    stop: () => tracked.stop(),
  };
}

/**
 * The operator CLI (`npm run latchkey -- …`), the interface an operator seeds a fresh install with.
 * It prints JSON.
 */
export async function latchkeyCli<T = Record<string, unknown>>(server: Latchkey, args: string[]): Promise<T> {
  const { PORT: _port, ...env } = server.env;
  try {
    const { stdout } = await promisify(execFile)('npm', ['run', '--silent', 'latchkey', '--', ...args], {
      cwd: REPO,
      env: { ...env, NODE_OPTIONS: process.env.NODE_OPTIONS },
    });
    return JSON.parse(stdout) as T;
  } catch (err) {
    const e = err as Error & { stderr?: string; stdout?: string };
    throw new Error(`npm run latchkey -- ${args.join(' ')}: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

export interface CreatedClient {
  clientId: string;
  clientSecret: string;
}

export async function createClient(
  server: Latchkey,
  name: string,
  options: { grants: string[]; scopes?: string[]; redirectUris?: string[] },
): Promise<CreatedClient> {
  const args = ['client', 'create', '--name', name];
  for (const g of options.grants) args.push('--grant', g);
  for (const s of options.scopes ?? []) args.push('--scope', s);
  for (const u of options.redirectUris ?? []) args.push('--redirect-uri', u);
  const created = await latchkeyCli<{ clientId?: string; clientSecret?: string }>(server, args);
  if (!created.clientId || !created.clientSecret)
    throw new Error(`client create ${name}: no clientId/clientSecret in ${JSON.stringify(created)}`);
  return { clientId: created.clientId, clientSecret: created.clientSecret };
}
