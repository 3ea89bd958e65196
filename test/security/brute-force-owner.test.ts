import { afterAll, describe, expect, test } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import { basic, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freezeClock, resetClock } from '../helpers/clock.ts';
import {
  answer,
  browserWith,
  codeRequest,
  expectRefused,
  expectThrottled,
  passwordGrant,
  tally,
  type PasswordClient,
} from '../helpers/throttle.ts';

/**
 * The brute-force policy seen from the account's owner (docs/decisions.md, "Right passwords under concurrency",
 * "Guessers cannot lock an owner out", "A backend in an outage"): only failures count, so right
 * passwords arriving together are never refused; guessers elsewhere never make the owner's right
 * password fail; and a cap on the account's total still bounds what everyone together may check.
 */

const PASSWORD = 'right-password-1';
const plugin = fileURLToPath(new URL('../fixtures/static-plugin/index.ts', import.meta.url));

/** A password grant from the address `from` (the servers here trust the loopback proxy). */
const grantFrom = (server: TestServer, client: PasswordClient, username: string, password: string, from: string) =>
  postForm(
    `${server.url}/oauth/v20/token`,
    { grant_type: 'password', username, password, ...(client.clientSecret ? {} : { client_id: client.clientId }) },
    { 'x-forwarded-for': from, ...(client.clientSecret ? { authorization: basic(client.clientId, client.clientSecret) } : {}) },
  ).then(answer);

const ADMIN_CLI: PasswordClient = { clientId: 'admin-cli', clientSecret: null };

function servers(kind: DatabaseKind) {
  const started: TestServer[] = [];
  const serve = async (overrides: Record<string, unknown> = {}) => {
    const s = await startTestServer(kind, { trustProxy: 'loopback', ...overrides });
    started.push(s);
    return s;
  };
  return { serve, stopAll: () => Promise.all(started.map((s) => s.stop())) };
}

describe.each(databaseKinds)('the owner of an account under the brute-force policy on %s', (kind) => {
  const { serve, stopAll } = servers(kind);
  afterAll(() => stopAll());

  test('32 right-password grants of one account at once, three times over: every one is answered 200', async () => {
    const server = await serve();
    await server.user('svc-batch', PASSWORD);
    const client = await server.client({ grantTypes: ['password'] });
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(
        Array.from({ length: 32 }, () => passwordGrant(server.url, client, 'svc-batch', PASSWORD).then(answer)),
      );
      expect(tally(answers)).toEqual({ 200: 32 });
    }
    // Nothing was counted against the account.
    expect(await server.sql('login_throttle').where('failures', '>', 0)).toEqual([]);
  });

  test('32 browsers without device cookies sign in to one account at once: none is refused', async () => {
    const server = await serve();
    await server.user('shared-desk', PASSWORD);
    const client = await server.client({ grantTypes: ['authorization_code'] });
    const pages = await Promise.all(
      Array.from({ length: 32 }, () => new Browser(server).signIn(codeRequest(client), 'shared-desk', PASSWORD)),
    );
    expect(tally(pages)).toEqual({ 303: 32 });
  });

  test('right passwords mixed with wrong ones: the wrong ones are counted, the right ones are not refused until the delay', async () => {
    const server = await serve();
    await server.user('mixed', PASSWORD);
    const client = await server.client({ grantTypes: ['password'] });
    // Four wrong and twenty right at once: four failures stay under the free five.
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => passwordGrant(server.url, client, 'mixed', i % 6 === 0 ? `wrong-${i}` : PASSWORD).then(answer)),
    );
    expect(tally(answers)).toEqual({ 200: 20, 400: 4 });
  });

  test('a guesser on admin-cli from another address never makes the owner’s right password fail', async () => {
    const server = await serve();
    await server.user('admin2', PASSWORD, { roles: ['admin'] });
    const app = await server.client({ grantTypes: ['password'] });
    const guesses: number[] = [];
    const owner: number[] = [];
    // The server's clock stands still, so that the guesser's one-second delay outlasts the loop on any machine.
    freezeClock();
    // The guesser keeps going while the owner signs in, on the public admin-cli and on a confidential client.
    for (let i = 0; i < 20; i++) {
      guesses.push((await grantFrom(server, ADMIN_CLI, 'admin2', `guess-${i}`, '203.0.113.66')).status);
      owner.push((await grantFrom(server, ADMIN_CLI, 'admin2', PASSWORD, '198.51.100.10')).status);
      owner.push((await grantFrom(server, app, 'admin2', PASSWORD, '203.0.113.66')).status);
    }
    expect(tally(owner.map((status) => ({ status })))).toEqual({ 200: 40 });
    // The guesser was checked five times and then held at the delay.
    expect(guesses.filter((s) => s === 400)).toHaveLength(5);
    expect(guesses.filter((s) => s === 429)).toHaveLength(15);
    resetClock();
  });

  test('guessers from many addresses: the account’s total caps what is checked; device cookies and confidential clients still sign in', async () => {
    const server = await serve({ throttle: { accountMaxFailures: 8 } });
    await server.user('target', PASSWORD);
    const app = await server.client({ grantTypes: ['authorization_code', 'password'] });
    // The owner's browser from an earlier sign-in.
    const owner = new Browser(server);
    expect((await owner.signIn(codeRequest(app), 'target', PASSWORD)).status).toBe(303);

    // Five addresses, four guesses each: each address stays under its own free five.
    const guesses = [];
    for (let a = 0; a < 5; a++)
      for (let i = 0; i < 4; i++) guesses.push(await grantFrom(server, ADMIN_CLI, 'target', `g-${a}-${i}`, `192.0.2.${a + 1}`));
    expect(tally(guesses)).toEqual({ 400: 8, 429: 12 });
    for (const g of guesses) if (g.status === 429) expectThrottled(g);
    const checked = await server.sql('audit_events').where({ kind: 'login.failure' }).count({ n: '*' });
    expect(Number(checked[0]!.n)).toBe(8);

    // The lanes that need a secret to open are not locked out by it.
    const back = browserWith(server, owner, ['lk_device']);
    expect((await back.signIn(codeRequest(app), 'target', PASSWORD)).status).toBe(303);
    expect((await grantFrom(server, app, 'target', PASSWORD, '192.0.2.200')).status).toBe(200);
  });

  test('IPv6 addresses are counted per /64', async () => {
    const server = await serve({ throttle: { addressMaxFailures: 3 } });
    await server.user('v6user', PASSWORD);
    const app = await server.client({ grantTypes: ['password'] });
    // Three failures from three addresses of one /64, each for another name.
    for (const [i, from] of ['2001:db8:1:2::1', '2001:db8:1:2::abcd', '2001:db8:1:2:ffff:1:2:3'].entries())
      expectRefused(await grantFrom(server, app, `nobody-${i}`, 'x', from));
    expectThrottled(await grantFrom(server, app, 'v6user', PASSWORD, '2001:0db8:0001:0002::9'));
    // The next /64 is another subscriber.
    expect((await grantFrom(server, app, 'v6user', PASSWORD, '2001:db8:1:3::1')).status).toBe(200);
  });

  test('during a directory outage, wrong answers of a same-named local account are not counted', async () => {
    const server = await serve({
      identity: {
        backends: [
          { id: 'corp', plugin, config: { down: true, users: { shared: { password: 'directory-pw' } } } },
          { id: 'local', plugin: 'database' },
        ],
      },
    });
    await server.user('shared', 'database-pw');
    const app = await server.client({ grantTypes: ['password'] });
    // The directory user keeps typing their directory password: the local account says no, uncounted.
    for (let i = 0; i < 8; i++) expectRefused(await answer(await passwordGrant(server.url, app, 'shared', 'directory-pw')));
    expect(await server.sql('login_throttle').where('failures', '>', 0)).toEqual([]);
    expect((await passwordGrant(server.url, app, 'shared', 'database-pw')).status).toBe(200);
  });
});
