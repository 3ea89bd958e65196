import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { AccountBrowser } from '../helpers/account.ts';
import { Receiver, sidOf, verifyLogoutToken } from '../helpers/backchannel-receiver.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually, timed } from '../helpers/eventually.ts';
import { Browser, exchangeCode, obtainCode, type CodeFlowClient } from '../helpers/flow.ts';
import { get, locationQuery } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

const LOGOUT = '/connect/v10/logout';
/** Short back-off, so a retry comes within the test; a quick poll, so another process finds a notice soon. */
const FAST = { logout: { backchannelRetryDelays: [300, 300, 300], backchannelPollInterval: 100 } };

describe.each(databaseKinds)('back-channel logout on %s', (kind) => {
  let server: TestServer;
  let one: Receiver;
  let two: Receiver;
  let appOne: CodeFlowClient;
  let appTwo: CodeFlowClient;
  let userId: string;

  beforeAll(async () => {
    server = await startTestServer(kind, FAST);
    userId = await server.user('bea', 'bea-password-1');
    [one, two] = await Promise.all([Receiver.start(), Receiver.start()]);
    appOne = await server.client({ scopes: ['openid'], backchannelLogoutUri: one.uri, redirectUris: ['http://localhost:3000/one'] });
    appTwo = await server.client({ scopes: ['openid'], backchannelLogoutUri: two.uri, redirectUris: ['http://localhost:3000/two'] });
  });
  afterAll(async () => {
    await server?.stop();
    await Promise.all([one?.close(), two?.close()]);
  });

  /** One browser signs in to both apps through the code flow: one SSO session, two id_tokens. */
  async function signedInToBoth(browser: Browser = new Browser(server)) {
    const first = await obtainCode(browser, appOne, 'bea', 'bea-password-1', { scope: 'openid' });
    const again = await browser.authorize({
      client_id: appTwo.clientId,
      redirect_uri: appTwo.redirectUri,
      response_type: 'code',
      scope: 'openid',
      state: 's',
    });
    expect(again.status).toBe(302);
    const second = locationQuery(again);
    const idTokens = await Promise.all(
      [
        [appOne, first.code!],
        [appTwo, second.code!],
      ].map(
        async ([app, code]) =>
          ((await (await exchangeCode(server, app as CodeFlowClient, code as string)).json()) as { id_token: string }).id_token,
      ),
    );
    const sid = sidOf(idTokens[0]!);
    expect(sidOf(idTokens[1]!)).toBe(sid);
    return { browser, idToken: idTokens[0]!, sid };
  }

  const reset = () => {
    for (const r of [one, two]) {
      r.tokens.length = 0;
      r.hits = 0;
      r.mode = 'ok';
    }
  };

  test('discovery says back-channel logout with sid is supported', async () => {
    const meta = (await (await get(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
  });

  test('the sid is stable for the session and is not its stored id', async () => {
    const { sid } = await signedInToBoth();
    const stored = (await server.sql('sso_sessions').select('id_hash')) as Array<{ id_hash: string }>;
    expect(stored.map((s) => s.id_hash)).not.toContain(sid);
  });

  test('RP-initiated logout: both apps get a logout_token for the session, verified against the JWKS, and it is audited', async () => {
    reset();
    const { browser, idToken, sid } = await signedInToBoth();
    const res = await get(server.url + LOGOUT, { id_token_hint: idToken }, { cookie: browser.jar.header() });
    expect(res.status).toBe(200);
    await eventually('both receivers got a logout token', async () => !!one.tokenFor(sid) && !!two.tokenFor(sid));
    for (const [r, app] of [
      [one, appOne],
      [two, appTwo],
    ] as const) {
      const claims = await verifyLogoutToken(server, r.tokenFor(sid)!, app.clientId);
      expect(claims).toMatchObject({ sub: userId, sid, aud: app.clientId });
    }
    await eventually('the deliveries are audited', async () => {
      const rows = await server
        .sql('audit_events')
        .where({ kind: 'logout.backchannel_delivered', user_id: userId })
        .whereIn('client_id', [appOne.clientId, appTwo.clientId]);
      return rows.filter((r) => String(r.details).includes(sid)).length === 2;
    });
    await eventually(
      'the queue keeps nothing delivered',
      async () => (await server.sql('backchannel_logouts').whereIn('client_id', [appOne.clientId, appTwo.clientId])).length === 0,
    );
  });

  test('a receiver that answers 500 first gets the token on a retry', async () => {
    reset();
    two.mode = 'fail-once';
    const { browser, idToken, sid } = await signedInToBoth();
    await get(server.url + LOGOUT, { id_token_hint: idToken }, { cookie: browser.jar.header() });
    await eventually('the retry reached the receiver', async () => !!two.tokenFor(sid));
    expect(two.hits).toBeGreaterThanOrEqual(2);
    expect((await verifyLogoutToken(server, two.tokenFor(sid)!, appTwo.clientId)).sid).toBe(sid);
    const delivered = await server.sql('audit_events').where({ kind: 'logout.backchannel_delivered', client_id: appTwo.clientId });
    expect(delivered.some((r) => String(r.details).includes(sid) && String(r.details).includes('"attempts":2'))).toBe(true);
  });

  test("an administrator revoking the user's tokens sends the logout too", async () => {
    reset();
    const { sid } = await signedInToBoth();
    const admin = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
    const answer = await graphqlPost(server, admin.access_token, 'mutation($u: ID) { revokeTokens(userId: $u) }', { u: userId });
    expect(answer.errors).toBeUndefined();
    await eventually('both receivers got a logout token', async () => !!one.tokenFor(sid) && !!two.tokenFor(sid));
    expect((await verifyLogoutToken(server, one.tokenFor(sid)!, appOne.clientId)).sid).toBe(sid);
  });

  test('"sign out everywhere" at /account sends it for the other sessions', async () => {
    reset();
    const { sid } = await signedInToBoth();
    const account = new AccountBrowser(server);
    await account.signInAtAccount('bea', 'bea-password-1');
    const page = await account.post('sign_out_everywhere', {});
    expect(page.status).toBeLessThan(400);
    await eventually('both receivers got a logout token', async () => !!one.tokenFor(sid) && !!two.tokenFor(sid));
    expect((await verifyLogoutToken(server, two.tokenFor(sid)!, appTwo.clientId)).sid).toBe(sid);
  });

  test('a receiver that keeps failing is given up after the last retry, with an audit event', async () => {
    reset();
    one.mode = 'fail';
    const { browser, idToken, sid } = await signedInToBoth();
    await get(server.url + LOGOUT, { id_token_hint: idToken }, { cookie: browser.jar.header() });
    await eventually('the final failure is audited', async () => {
      const rows = await server.sql('audit_events').where({ kind: 'logout.backchannel_failed', client_id: appOne.clientId });
      return rows.some((r) => String(r.details).includes(sid));
    });
    // The first try and one per retry delay (three in this config).
    expect(one.hits).toBe(4);
    expect(await server.sql('backchannel_logouts').where({ client_id: appOne.clientId })).toEqual([]);
    one.mode = 'ok';
  });

  test('deleting a user through the admin API sends the logout for their sessions', async () => {
    reset();
    const id = await server.user('dov', 'dov-password-1');
    const browser = new Browser(server);
    const { code } = await obtainCode(browser, appOne, 'dov', 'dov-password-1', { scope: 'openid' });
    const { id_token } = (await (await exchangeCode(server, appOne, code!)).json()) as { id_token: string };
    const admin = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
    const answer = await graphqlPost(server, admin.access_token, 'mutation($id: ID!) { deleteUser(id: $id) }', { id });
    expect(answer.errors).toBeUndefined();
    await eventually('the app got a logout token', async () => !!one.tokenFor(sidOf(id_token)));
    expect(await verifyLogoutToken(server, one.tokenFor(sidOf(id_token))!, appOne.clientId)).toMatchObject({ sub: id });
  });

  test('backchannelLogoutUri through the admin API: set, shown, removed', async () => {
    const admin = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
    const made = await graphqlPost(
      server,
      admin.access_token,
      'mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId backchannelLogoutUri } } }',
      { i: { name: 'Notified', redirectUris: ['https://rp.example/cb'], backchannelLogoutUri: 'https://rp.example/logout' } },
    );
    const client = (made.data!.registerClient as { client: { clientId: string; backchannelLogoutUri: string } }).client;
    expect(client.backchannelLogoutUri).toBe('https://rp.example/logout');
    const bad = await graphqlPost(
      server,
      admin.access_token,
      'mutation($c: ID!) { updateClient(clientId: $c, input: { backchannelLogoutUri: "javascript:alert(1)" }) { clientId } }',
      { c: client.clientId },
    );
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const cleared = await graphqlPost(
      server,
      admin.access_token,
      'mutation($c: ID!) { updateClient(clientId: $c, input: { backchannelLogoutUri: null }) { backchannelLogoutUri } }',
      { c: client.clientId },
    );
    expect(cleared.data!.updateClient).toEqual({ backchannelLogoutUri: null });
  });

  // Last: the hanging receiver's retries go on until the server stops.
  test('a receiver that hangs does not delay the logout; the other still gets its token at once', async () => {
    reset();
    two.mode = 'hang';
    const { browser, idToken, sid } = await signedInToBoth();
    const [res, ms] = await timed(() => get(server.url + LOGOUT, { id_token_hint: idToken }, { cookie: browser.jar.header() }));
    expect(res.status).toBe(200);
    expect(ms).toBeLessThan(1000);
    await eventually('the first receiver got its token', async () => !!one.tokenFor(sid));
    await eventually('the hanging receiver is still holding the delivery', async () => two.waiting > 0);
  });

  test('backchannelLogoutUri must be an absolute http(s) URL', async () => {
    await expect(server.client({ backchannelLogoutUri: 'ftp://example.com/x' })).rejects.toThrow(/http or https/);
    await expect(server.client({ backchannelLogoutUri: '/relative' })).rejects.toThrow(/absolute/);
  });
});

describe('back-channel logout queued by a process that stops is delivered by another (postgres)', () => {
  test("the second server delivers the first one's notice", async () => {
    const first = await startTestServer('postgres', { logout: { backchannelRetryDelays: [1500, 300], backchannelPollInterval: 100 } });
    let second: RunningServer | undefined;
    // The receiver is down at first: the first server's try fails, and it stops before the retry.
    const port = await freePort();
    let receiver: Receiver | undefined;
    try {
      await first.user('cai', 'cai-password-1');
      const app = await first.client({ scopes: ['openid'], backchannelLogoutUri: `http://127.0.0.1:${port}/backchannel-logout` });
      const browser = new Browser(first);
      const { code } = await obtainCode(browser, app, 'cai', 'cai-password-1', { scope: 'openid' });
      const { id_token } = (await (await exchangeCode(first, app, code!)).json()) as { id_token: string };
      await get(first.url + LOGOUT, { id_token_hint: id_token }, { cookie: browser.jar.header() });
      await first.close();

      receiver = await Receiver.start(port);
      const c = first.ctx.config;
      const config = loadConfig(
        { LATCHKEY_CONFIG: undefined },
        {
          port: await freePort(),
          host: '127.0.0.1',
          publicUrl: c.publicUrl,
          databaseUrl: first.db.url,
          secret: c.secret,
          admin: c.admin,
          logout: c.logout,
        },
      );
      second = await startServer(config, pino({ level: 'silent' }));
      await eventually('the second server delivered it', async () => receiver!.tokens.length === 1);
      const claims = await verifyLogoutToken(second, receiver.tokens[0]!, app.clientId);
      expect(claims.sid).toBe(sidOf(id_token));

      // A notice claimed by a process that died mid-delivery: once the claim runs out, another sends it.
      const now = Date.now();
      await second.sql('backchannel_logouts').insert({
        id: 'left-by-a-dead-process',
        client_id: app.clientId,
        user_id: 'u-1',
        sid: 'sid-dead',
        attempts: 0,
        due_at: now,
        claimed_until: now + 700,
        created_at: now,
      });
      await eventually('the orphaned claim expired and the notice went out', async () => !!receiver!.tokenFor('sid-dead'));
      expect(Date.now() - now).toBeGreaterThanOrEqual(700);
    } finally {
      await second?.close();
      await receiver?.close();
      await first.db.drop();
    }
  });
});

describe('the back-channel logout endpoint of docs/connect-an-application.md, as printed there', () => {
  const file = fileURLToPath(new URL(`./.readme-backchannel-${process.pid}.ts`, import.meta.url));
  let server: TestServer;
  let site: Server;
  const ended: Array<[string, string]> = [];

  beforeAll(async () => {
    const readme = readFileSync(fileURLToPath(new URL('../../docs/connect-an-application.md', import.meta.url)), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Single logout')));
    if (!block) throw new Error('docs/connect-an-application.md: no ts block under "Single logout"');
    writeFileSync(file, block[1]!);
    const { backchannelLogout } = (await import(file)) as {
      backchannelLogout: (i: string, c: string, end: (sid: string, sub: string) => Promise<void>) => express.Router;
    };
    server = await startTestServer('sqlite', FAST);
    const port = await freePort();
    const app = await server.client({ scopes: ['openid'], backchannelLogoutUri: `http://127.0.0.1:${port}/backchannel-logout` });
    const rp = express().use(backchannelLogout(server.ctx.config.publicUrl, app.clientId, async (sid, sub) => void ended.push([sid, sub])));
    await new Promise<void>((resolve) => (site = rp.listen(port, '127.0.0.1', () => resolve())));
    appForReadme = app;
  });
  let appForReadme: CodeFlowClient;
  afterAll(async () => {
    rmSync(file, { force: true });
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
    await server?.stop();
  });

  test("it verifies the token and ends the application's session for its sid; a forged token is refused", async () => {
    const userId = await server.user('eli', 'eli-password-1');
    const browser = new Browser(server);
    const { code } = await obtainCode(browser, appForReadme, 'eli', 'eli-password-1', { scope: 'openid' });
    const { id_token } = (await (await exchangeCode(server, appForReadme, code!)).json()) as { id_token: string };
    await get(server.url + LOGOUT, { id_token_hint: id_token }, { cookie: browser.jar.header() });
    await eventually('the application ended its session', async () => ended.length === 1);
    expect(ended).toEqual([[sidOf(id_token), userId]]);
    // An id_token is not a logout token.
    const forged = await fetch(`http://127.0.0.1:${(site.address() as { port: number }).port}/backchannel-logout`, {
      method: 'POST',
      body: new URLSearchParams({ logout_token: id_token }),
    });
    expect(forged.status).toBe(400);
  });
});
