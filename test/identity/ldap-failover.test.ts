import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { people } from '../fixtures/ldap/directory.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually, timed } from '../helpers/eventually.ts';
import { Browser } from '../helpers/flow.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

/**
 * Two replicas of one directory (same data, same entryUUIDs) that the tests stop, restart and freeze
 * while the server runs: failover, failback, timeouts, pool exhaustion, and a whole-directory outage.
 */
describe.each(databaseKinds)('LDAP failover and outages on %s', (kind) => {
  let a: Slapd;
  let b: Slapd;
  const servers: TestServer[] = [];

  const serve = async (config: Record<string, unknown>) => {
    const s = await startTestServer(kind, ldapChain(config));
    servers.push(s);
    return s;
  };
  const signIn = async (server: TestServer, username = 'alice', password = people.alice.password) => {
    const c = await server.client({ grantTypes: ['password'] });
    const res = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password },
      { authorization: basic(c.clientId, c.clientSecret!) },
    );
    return { status: res.status, body: (await res.json()) as { error?: string; access_token?: string } };
  };

  const readiness = async (server: TestServer) =>
    ((await (await get(`${server.url}/readyz`)).json()) as { backends: Record<string, string> }).backends.corp;
  /** Once the directory answers again, the background probe lets its users back in (docs/decisions.md). */
  const backUp = (server: TestServer) => eventually('alice signs in again', async () => (await signIn(server)).status === 200);

  beforeAll(async () => {
    [a, b] = await Promise.all([startSlapd(), startSlapd()]);
  });
  afterEach(async () => {
    // Every test leaves both replicas up and answering.
    for (const s of [a, b]) {
      s.resume();
      await s.start(); // a no-op for a server that is running
    }
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await Promise.all([a?.destroy(), b?.destroy()]);
  });

  test('a dead first server does not fail sign-in while another answers; a server that comes back is used again', async () => {
    const server = await serve(ldapBackendConfig(a, { url: [a.url, b.url], timeoutMs: 1000 }));
    expect((await signIn(server)).status).toBe(200);
    await a.stop();
    expect((await signIn(server)).status).toBe(200);
    expect((await signIn(server, 'bob', people.bob.password)).status).toBe(200);
    await a.start();
    await b.stop();
    // Only the first server is up again: it must be used.
    expect((await signIn(server)).status).toBe(200);
    expect((await signIn(server, 'bob', people.bob.password)).status).toBe(200);
  });

  test('a hung server (connected, answering nothing) is cut off by timeoutMs and failed over', async () => {
    const server = await serve(ldapBackendConfig(a, { url: [a.url, b.url], timeoutMs: 800 }));
    expect((await signIn(server)).status).toBe(200); // a pooled connection to a exists now
    a.pause();
    const started = Date.now();
    expect((await signIn(server)).status).toBe(200);
    // Bounded: one timeout on the frozen server, then the other one; nowhere near a hang.
    expect(Date.now() - started).toBeLessThan(8 * 800);
  });

  test('every connection stuck: callers get 503 once timeoutMs passes, and the pool recovers', async () => {
    const server = await serve(ldapBackendConfig(a, { url: a.url, timeoutMs: 600, poolSize: 1 }));
    expect((await signIn(server)).status).toBe(200);
    a.pause();
    const answers = await Promise.all([1, 2, 3, 4].map(() => signIn(server)));
    expect(answers.map((r) => [r.status, r.body.error])).toEqual(Array(4).fill([503, 'temporarily_unavailable']));
    // The readiness probe does not hang with the directory: it answers, naming the backend down.
    const ready = await get(`${server.url}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { database: 'up', backends: { corp: 'down', local: 'up' } }]);
    a.resume();
    await backUp(server);
  });

  test('a hung directory costs one sign-in timeoutMs, once; then it is skipped at once (its users 503, local users 200) until a probe finds it answering', async () => {
    const timeoutMs = 1500;
    const server = await serve(ldapBackendConfig(a, { url: a.url, timeoutMs }));
    await server.user('lee', 'lee-local-password');
    // One client for every grant, so that the times measured are the grants' alone.
    const c = await server.client({ grantTypes: ['password'] });
    const grant = async (username: string, password: string) => {
      const res = await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username, password },
        { authorization: basic(c.clientId, c.clientSecret!) },
      );
      return { status: res.status, body: (await res.json()) as { error?: string } };
    };
    const lee = () => grant('lee', 'lee-local-password');
    const alice = () => grant('alice', people.alice.password);
    const unavailable = {
      status: 503,
      body: { error: 'temporarily_unavailable', error_description: 'the identity backend is unreachable; try again later' },
    };
    expect((await signIn(server)).status).toBe(200); // pooled connections to the directory exist now

    // First a local user (the chain asks the directory first), then, once it is back and hangs again, a directory user.
    for (const [who, firstAnswer] of [
      [lee, 200],
      [alice, 503],
    ] as const) {
      a.pause(); // SIGSTOP: connections stay open, nothing answers
      const [first, firstMs] = await timed(who);
      expect(first.status).toBe(firstAnswer);
      // Generous bounds, for a busy machine: the first waits about timeoutMs (not twice), the next ones not at all.
      expect(firstMs).toBeLessThan(2 * timeoutMs);
      for (let i = 0; i < 3; i++) {
        const [directoryUser, directoryMs] = await timed(alice);
        expect(directoryUser).toEqual(unavailable);
        expect(directoryMs).toBeLessThan(timeoutMs / 2);
        const [localUser, localMs] = await timed(lee);
        expect(localUser.status).toBe(200);
        expect(localMs).toBeLessThan(timeoutMs / 2);
      }
      expect(await readiness(server)).toBe('down');
      expect(sample(await scrape(server.url), 'latchkey_identity_backend_up', { backend: 'corp' })).toBe(0);

      a.resume(); // SIGCONT
      await backUp(server);
      expect(await readiness(server)).toBe('up');
      expect(sample(await scrape(server.url), 'latchkey_identity_backend_up', { backend: 'corp' })).toBe(1);
    }
    // Every outage was given back, none counted as a failed login.
    expect(await server.sql('login_throttle').where('failures', '>', 0)).toEqual([]);
  });

  test('a stopped directory started again: the first sign-in after it returns succeeds, without waiting for the probe (half-open)', async () => {
    const server = await serve(ldapBackendConfig(a, { url: a.url, timeoutMs: 5000 }));
    expect((await signIn(server)).status).toBe(200);
    await a.stop();
    for (let i = 0; i < 3; i++) {
      const [down, downMs] = await timed(() => signIn(server));
      expect(down.status).toBe(503);
      expect(downMs).toBeLessThan(2500); // a refused port is tried and refused at once, never a timeout
    }
    expect(await readiness(server)).toBe('down');
    await a.start();
    // The probe runs every 2 s; this sign-in comes right after the restart and must not wait for it.
    expect((await signIn(server)).status).toBe(200);
    expect(await readiness(server)).toBe('up');
  });

  test('the whole directory down: 503 for its users, never a failed login; /readyz stays 200 naming it; local users still sign in', async () => {
    const server = await serve(ldapBackendConfig(a, { url: [a.url, b.url], timeoutMs: 1000 }));
    await server.user('lee', 'lee-local-password');
    await Promise.all([a.stop(), b.stop()]);

    for (let i = 0; i < 7; i++)
      expect(await signIn(server)).toEqual({
        status: 503,
        body: { error: 'temporarily_unavailable', error_description: 'the identity backend is unreachable; try again later' },
      });
    const page = await new Browser(server).signIn(
      { client_id: (await server.client()).clientId, redirect_uri: 'http://localhost:3000/callback', response_type: 'code' },
      'alice',
      people.alice.password,
    );
    expect(page.status).toBe(503);
    expect(await page.text()).toContain('The directory is unreachable right now.');

    const ready = await get(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ database: 'up', backends: { corp: 'down', local: 'up' } });
    expect((await signIn(server, 'lee', 'lee-local-password')).status).toBe(200);

    // The log says which backend and which servers.
    const line = server.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'identity backend unavailable');
    expect(line).toMatchObject({ backend: 'corp' });
    expect(String(line!.err)).toContain(a.url);

    // Eight outages counted nothing: every attempt was counted before the check and given back, and
    // the right password works at once when the directory is back.
    expect(await server.sql('login_throttle').where('failures', '>', 0)).toEqual([]);
    await b.start();
    await backUp(server);
  });
});
