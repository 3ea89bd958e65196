import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './ports.ts';

const run = promisify(execFile);
const BIN = process.env.TEST_POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';

/**
 * A PostgreSQL server of the test's own (never the shared one on 5432), so a test can stop and start it
 * under a running Latchkey: a real database outage. PostgreSQL refuses to run as root, so as root the
 * binaries run as the `postgres` user on a temp dir owned by it (STACK.md). Missing binaries fail the
 * test, never skip it.
 */
export interface ThrowawayPostgres {
  /** `postgres://postgres@127.0.0.1:PORT/latchkey`: a database made for the test. */
  url: string;
  port: number;
  /** Stops the server: `fast` ends sessions cleanly; `immediate` is a crash (no shutdown checkpoint). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same data directory and port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it if running and removes every file it made. */
  destroy(): Promise<void>;
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-pg-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const pgBin = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(BIN, tool), ...args]) : run(join(BIN, tool), args);

  await pgBin('initdb', ['-D', data, '-U', 'postgres', '--auth-local=trust', '--auth-host=trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
  let running = false;

  const start = async () => {
    if (running) return;
    await pgBin('pg_ctl', ['-D', data, '-l', join(dir, 'postgres.log'), '-w', '-t', '30', '-o', options, 'start']);
    running = true;
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    if (!running) return;
    await pgBin('pg_ctl', ['-D', data, '-w', '-t', '30', '-m', mode, 'stop']);
    running = false;
  };

  try {
    await start();
    const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
    await admin.connect();
    try {
      await admin.query('CREATE DATABASE latchkey');
    } finally {
      await admin.end();
    }
  } catch (err) {
    await stop('immediate').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    url: `postgres://postgres@127.0.0.1:${port}/latchkey`,
    port,
    start,
    stop,
    async destroy() {
      await stop('immediate').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
