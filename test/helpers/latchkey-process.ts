import { spawn } from 'node:child_process';
import { freePort } from './ports.ts';
import { ADMIN_PASSWORD } from './server.ts';

/** Latchkey as its own OS process, started as `npm start` starts it (scripts/start.mjs, the bundle in dist/). */
export interface LatchkeyProcess {
  url: string;
  pid: number;
  /** Everything it printed on stdout and stderr so far. */
  output(): string;
  /** SIGTERM, then waits for it to exit. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash or an OOM kill ends it (no shutdown code runs), then waits for it to exit. */
  kill(): Promise<void>;
}

/**
 * Starts a second Latchkey process, e.g. on the database of a TestServer: `DATABASE_URL` and
 * `LATCHKEY_SECRET` must then be that server's, as for any two nodes of one deployment.
 */
export async function spawnLatchkey(
  env: { DATABASE_URL: string; LATCHKEY_SECRET: string } & Record<string, string>,
  startupMs = 60_000,
): Promise<LatchkeyProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let out = '';
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH!,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: url,
      LOG_LEVEL: 'info',
      LATCHKEY_ADMIN_PASSWORD: ADMIN_PASSWORD,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };

  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await exited;
  };

  const deadline = Date.now() + startupMs;
  while (!out.includes('latchkey listening')) {
    if (child.exitCode !== null) throw new Error(`latchkey process exited with ${child.exitCode} before listening:\n${out}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`latchkey process did not listen within ${startupMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, pid: child.pid!, output: () => out, stop, kill };
}
