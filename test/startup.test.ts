import { afterAll, describe, expect, jest, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postForm } from './helpers/http.ts';
import { freePort } from './helpers/ports.ts';

/** `npm start` as an operator runs it: the real entry point in its own process. */
const dir = mkdtempSync(join(tmpdir(), 'latchkey-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function start(env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let out = '';
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    env: { PATH: process.env.PATH!, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output: () => out, exited };
}

async function waitFor(check: () => boolean, ms = 120_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Each start loads and transpiles the whole server in a fresh process: allow minutes on a loaded machine.
jest.setTimeout(300_000);

describe('starting the server', () => {
  test('first start creates the admin with a generated password, printed once; SIGTERM stops it', async () => {
    const port = await freePort();
    const env = { PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 'first.db')}` };
    const first = start(env);
    await waitFor(() => first.output().includes('latchkey listening'));
    const match = /Generated password \(shown once\): (\S+)/.exec(first.output());
    expect(match).not.toBeNull();
    expect(first.output()).toContain('LATCHKEY_SECRET is not set');

    // The printed password works, through the built-in public client admin-cli.
    const res = await postForm(`http://127.0.0.1:${port}/oauth/v20/token`, {
      grant_type: 'password',
      client_id: 'admin-cli',
      username: 'admin',
      password: match![1]!,
    });
    expect(res.status).toBe(200);
    // The secret is printed once, never in a structured log line.
    expect(first.output().split(match![1]!).length - 1).toBe(1);

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = start(env);
    await waitFor(() => second.output().includes('latchkey listening'));
    expect(second.output()).not.toContain('Generated password');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  test('a bad setting stops the start with a message naming the key', async () => {
    const bad = start({ PORT: 'eighty', DATABASE_URL: `sqlite:${join(dir, 'bad.db')}` });
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toMatch(/port: /);

    const file = join(dir, 'latchkey.config.yaml');
    writeFileSync(file, 'identity:\n  backends:\n    - id: broken\n      plugin: no-such-plugin\n');
    const broken = start({ LATCHKEY_CONFIG: file, PORT: String(await freePort()), DATABASE_URL: `sqlite:${join(dir, 'broken.db')}` });
    expect(await broken.exited).toBe(1);
    expect(broken.output()).toContain('identity backend \\"broken\\" (plugin \\"no-such-plugin\\")');
  });

  test('a TypeScript plugin under plugins/ loads into the bundled server, and its outages are outages', async () => {
    // A third party's backend, as its author writes it: TypeScript importing the contract from src/.
    const name = `readme-example-start-${process.pid}`;
    const folder = join('plugins', name);
    mkdirSync(folder);
    try {
      writeFileSync(
        join(folder, 'index.ts'),
        readFileSync('test/fixtures/static-plugin/index.ts', 'utf8').replace("'../../../src/", "'../../src/"),
      );
      const file = join(dir, 'plugin.yaml');
      writeFileSync(
        file,
        [
          'identity:',
          '  backends:',
          `    - { id: partners, plugin: ${name}, config: { users: { pat: { password: pat-password-1 } } } }`,
          `    - { id: offline, plugin: ${name}, config: { down: true } }`,
          '    - { id: local, plugin: database }',
        ].join('\n'),
      );
      const port = await freePort();
      const server = start({
        LATCHKEY_CONFIG: file,
        PORT: String(port),
        DATABASE_URL: `sqlite:${join(dir, 'plugin.db')}`,
        LATCHKEY_ADMIN_PASSWORD: 'admin-password-1',
      });
      await waitFor(() => server.output().includes('latchkey listening') || server.child.exitCode !== null);
      const grant = (username: string, password: string) =>
        postForm(`http://127.0.0.1:${port}/oauth/v20/token`, { grant_type: 'password', client_id: 'admin-cli', username, password });
      expect((await grant('pat', 'pat-password-1')).status).toBe(200);
      // Nobody answered for this name and one backend was down: an outage (503), never a failed login.
      const unknown = await grant('nobody', 'some-password-1');
      expect(unknown.status).toBe(503);
      expect(((await unknown.json()) as { error: string }).error).toBe('temporarily_unavailable');
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
