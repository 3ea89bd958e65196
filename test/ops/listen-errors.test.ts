import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD } from '../helpers/server.ts';

/**
 * A port already in use stops the start with a message the operator can act on ("<host>:<port> is
 * already in use: …" on stderr) and exit code 1, in one process as in cluster mode, where the primary
 * stops instead of restarting workers that cannot listen. Never a TypeError or a stack trace.
 */

const dir = mkdtempSync(join(tmpdir(), 'latchkey-listen-'));
let squatter: Server;
let port: number;

beforeAll(async () => {
  port = await freePort();
  squatter = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    squatter.once('error', reject);
    squatter.listen(port, '127.0.0.1', resolve);
  });
});
afterAll(async () => {
  await new Promise((resolve) => squatter?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Starts Latchkey as `npm start` does on the taken port; resolves with its exit code, output and run time. */
function start(name: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; output: string; ms: number }> {
  const began = Date.now();
  let stderr = '';
  let output = '';
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    env: {
      PATH: process.env.PATH!,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
      DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`,
      LATCHKEY_SECRET: 'test-secret-test-secret-test-secret-0123',
      LATCHKEY_ADMIN_PASSWORD: ADMIN_PASSWORD,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => {
    stderr += d;
    output += d;
  });
  // A start that never ends is a failure of its own: stop it, and let the exit code tell.
  const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(guard);
      resolve({ code, stderr, output, ms: Date.now() - began });
    }),
  );
}

function expectExplained(run: { code: number | null; stderr: string; output: string; ms: number }): void {
  expect(run.code).toBe(1);
  expect(run.stderr).toContain(`127.0.0.1:${port} is already in use`);
  expect(run.output).not.toMatch(/TypeError|\n\s+at |"stack"/);
  // Migrating a fresh database and loading the server takes a few seconds; the failure itself no time.
  expect(run.ms).toBeLessThan(20_000);
}

describe('a port already in use', () => {
  test('one process: exits 1 with "is already in use", no stack trace', async () => {
    const run = await start('single', {});
    expectExplained(run);
    expect(run.output).not.toContain('latchkey listening');
  });

  test('cluster mode (WORKERS=2): the primary stops with exit 1 instead of restarting the workers, and says why', async () => {
    const run = await start('cluster', { WORKERS: '2' });
    expectExplained(run);
    expect(run.output).toContain('a worker failed to start');
    expect(run.output).not.toContain('a worker died; starting a new one');
    expect(run.output).not.toContain('every worker is listening');
  });

  test('the port really was taken: the other server still answers on it', async () => {
    await new Promise<void>((resolve, reject) => {
      const c = createConnection({ port, host: '127.0.0.1' }, () => {
        c.destroy();
        resolve();
      });
      c.once('error', reject);
    });
  });
});
