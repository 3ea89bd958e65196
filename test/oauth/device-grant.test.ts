import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oidc from 'openid-client';
import { decodeJwt } from 'jose';
import { textOf } from '../helpers/account.ts';
import { advanceClock, resetClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import { CookieJar, get, hiddenFields, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { codeAt } from '../helpers/totp.ts';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const MAX_WRONG = 4;

interface Started {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** docs/connect-an-application.md's "Command-line tools" requests: `curl -s -d k=v … URL`, in order. */
function readmeRequests(): Array<{ url: string; fields: Record<string, string> }> {
  const readme = readFileSync(new URL('../../docs/connect-an-application.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Command-line tools'));
  return [...section.matchAll(/^curl -s (.*)$/gm)].map(([, args]) => {
    const words = [...args!.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
    const fields: Record<string, string> = {};
    for (let i = 0; i < words.length - 1; i++) {
      if (words[i] !== '-d') continue;
      const [k, ...v] = words[++i]!.split('=');
      fields[k!] = v.join('=');
    }
    return { url: words[words.length - 1]!, fields };
  });
}

/** RFC 8628 end to end: a stock library polls while a browser signs in at /device and decides. */
describe.each(databaseKinds)('device authorization grant on %s', (kind) => {
  let server: TestServer;
  let userId: string;
  let cli: { clientId: string };

  beforeAll(async () => {
    server = await startTestServer(kind, { throttle: { addressMaxFailures: MAX_WRONG } });
    userId = await server.user('dora', 'dora-password-1', { email: 'dora@example.org' });
    cli = await server.client({
      name: 'Dora CLI',
      confidential: false,
      grantTypes: [DEVICE, 'refresh_token'],
      redirectUris: [],
      scopes: ['openid', 'profile', 'email'],
    });
  });
  afterAll(async () => {
    resetClock();
    await server.stop();
  });

  const configFor = (clientId: string) =>
    oidc.discovery(new URL(server.url), clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });

  const start = async (clientId = cli.clientId, scope = 'openid profile offline_access'): Promise<Started> => {
    const res = await postForm(`${server.url}/oauth/v20/device_authorization`, { client_id: clientId, scope });
    expect(res.status).toBe(200);
    return (await res.json()) as Started;
  };
  const poll = async (deviceCode: string, clientId = cli.clientId) => {
    const res = await postForm(`${server.url}/oauth/v20/token`, { grant_type: DEVICE, device_code: deviceCode, client_id: clientId });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };

  /** The user at /device: opens the link, signs in (once per browser), and approves or denies. */
  async function decide(browser: Browser, userCode: string, decision: 'approve' | 'deny', signIn = true): Promise<string> {
    let page = await browser.authorize({ user_code: userCode }, '/device');
    expect(page.status).toBe(200);
    if (signIn) {
      page = await browser.submit(page, { username: 'dora', password: 'dora-password-1' }, '/device');
      expect(page.status).toBe(200);
    }
    const approval = await page.clone().text();
    expect(approval).toContain('Dora CLI');
    expect(approval).toContain(userCode);
    const done = await browser.submit(page, { decision }, '/device');
    expect(done.status).toBe(200);
    return done.text();
  }

  test('discovery names the endpoint and the grant; the codes have the RFC shape', async () => {
    const meta = (await (await get(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(meta.device_authorization_endpoint).toBe(`${server.ctx.config.publicUrl}/oauth/v20/device_authorization`);
    expect(meta.grant_types_supported).toContain(DEVICE);
    const s = await start();
    expect(s.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(s.verification_uri).toBe(`${server.ctx.config.publicUrl}/device`);
    expect(s.verification_uri_complete).toBe(`${s.verification_uri}?user_code=${s.user_code}`);
    expect(s).toMatchObject({ expires_in: 600, interval: 5 });
    // Stored hashed: the table holds no device code.
    const rows = await server.sql('device_codes').where({ device_code_hash: s.device_code });
    expect(rows).toHaveLength(0);
    // A client without the grant is refused.
    const other = await server.client({ grantTypes: ['authorization_code'] });
    const refused = await postForm(`${server.url}/oauth/v20/device_authorization`, {
      client_id: other.clientId,
      client_secret: other.clientSecret!,
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('unauthorized_client');
    const badScope = await postForm(`${server.url}/oauth/v20/device_authorization`, { client_id: cli.clientId, scope: 'openid admin' });
    expect(((await badScope.json()) as { error: string }).error).toBe('invalid_scope');
    // Bad input gets the interface's error shape, never a 500.
    const noClient = await postForm(`${server.url}/oauth/v20/device_authorization`, {});
    expect(((await noClient.json()) as { error: string }).error).toBe('empty_client_id');
    expect(await poll('')).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await poll('no-such-code')).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const repeated = await fetch(`${server.url}/device?user_code=a&user_code=b`);
    expect(repeated.status).toBe(400);
  });

  test('openid-client polls while the browser signs in and approves: tokens with id_token and refresh token', async () => {
    const config = await configFor(cli.clientId);
    const started = await oidc.initiateDeviceAuthorization(config, { scope: 'openid profile offline_access' });
    expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
    const polling = oidc.pollDeviceAuthorizationGrant(config, started);
    const done = await decide(new Browser(server), started.user_code, 'approve');
    expect(done).toContain('Device connected');
    const tokens = await polling;
    expect(tokens.claims()!.sub).toBe(userId);
    expect(tokens.refresh_token).toBeTruthy();
    const info = await oidc.fetchUserInfo(config, tokens.access_token, userId);
    expect(info.preferred_username).toBe('dora');
  }, 30_000);

  test('deny: the poll ends with access_denied, and the denial is audited', async () => {
    const config = await configFor(cli.clientId);
    const started = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    const polling = oidc.pollDeviceAuthorizationGrant(config, started).then(
      () => 'tokens',
      (err: { error?: string }) => err.error,
    );
    // Typed by hand this time, lower case and without the dash.
    const browser = new Browser(server);
    const form = await browser.authorize({}, '/device');
    const login = await browser.submit(form, { user_code: started.user_code.replace('-', '').toLowerCase() }, '/device');
    expect(login.status).toBe(200);
    const approval = await browser.submit(login, { username: 'dora', password: 'dora-password-1' }, '/device');
    const denied = await browser.submit(approval, { decision: 'deny' }, '/device');
    expect(await denied.text()).toContain('Request denied');
    expect(await polling).toBe('access_denied');
    const audited = await server.sql('audit_events').where({ kind: 'consent.denied', user_id: userId, client_id: cli.clientId });
    expect(audited).toHaveLength(1);
    expect(JSON.parse(String(audited[0]!.details))).toMatchObject({ device: true, scopes: ['openid'] });
  }, 30_000);

  test('slow_down when polling faster than the interval; the interval grows by 5 s and is kept', async () => {
    const s = await start();
    expect((await poll(s.device_code)).body.error).toBe('authorization_pending');
    const fast = await poll(s.device_code);
    expect(fast).toMatchObject({ status: 400, body: { error: 'slow_down' } });
    expect((await poll(s.device_code)).body.error).toBe('slow_down');
    const [row] = await server.sql('device_codes').where({ user_code: s.user_code.replace('-', '') });
    expect(Number(row!.interval_s)).toBe(15);
    advanceClock(16_000);
    expect((await poll(s.device_code)).body.error).toBe('authorization_pending');
  });

  test("single use: of two concurrent polls after approval one gets the tokens; another client's poll is invalid_grant", async () => {
    const s = await start();
    const browser = new Browser(server);
    await decide(browser, s.user_code, 'approve');
    const other = await server.client({ name: 'Other CLI', confidential: false, grantTypes: [DEVICE], redirectUris: [] });
    expect(await poll(s.device_code, other.clientId)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });

    const both = await Promise.all([poll(s.device_code), poll(s.device_code)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    const won = both.find((r) => r.status === 200)!;
    expect(won.body).toMatchObject({ token_type: 'bearer', scope: 'openid profile offline_access' });
    expect(won.body.id_token).toBeTruthy();
    expect(both.find((r) => r.status === 400)!.body.error).toBe('invalid_grant');
    expect((await poll(s.device_code)).body.error).toBe('invalid_grant');

    // The same code cannot be approved twice at /device; the signed-in browser is told so plainly.
    const again = await browser.authorize({ user_code: s.user_code }, '/device');
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('already used');
  });

  test('an approval whose SSO session ended since gets no tokens', async () => {
    const s = await start();
    await decide(new Browser(server), s.user_code, 'approve');
    const [row] = await server.sql('device_codes').where({ user_code: s.user_code.replace('-', '') });
    await server.sql('sso_sessions').where({ id_hash: row!.session_id }).update({ expires_at: 0 });
    advanceClock(6_000);
    expect(await poll(s.device_code)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  test('expired_token once expires_in passed; the page says the code expired', async () => {
    const s = await start();
    advanceClock(601_000);
    expect(await poll(s.device_code)).toMatchObject({ status: 400, body: { error: 'expired_token' } });
    const page = await new Browser(server).authorize({ user_code: s.user_code }, '/device');
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('expired');
  });

  test("the guide's curl example works as written", async () => {
    const env = (v: string, vars: Record<string, string>) => v.replace(/\$([A-Z_]+)/g, (_, name: string) => vars[name]!);
    const [ask, pollReq] = readmeRequests();
    expect(ask && pollReq).toBeTruthy();
    const vars: Record<string, string> = { LATCHKEY: server.url, CLIENT_ID: cli.clientId };
    const send = async (r: { url: string; fields: Record<string, string> }) => {
      const fields = Object.fromEntries(Object.entries(r.fields).map(([k, v]) => [k, env(v, vars)]));
      const res = await postForm(env(r.url, vars), fields);
      return { status: res.status, body: (await res.json()) as Record<string, string> };
    };
    const started = await send(ask!);
    expect(started.status).toBe(200);
    vars.DEVICE_CODE = started.body.device_code!;
    expect((await send(pollReq!)).body.error).toBe('authorization_pending');
    await decide(new Browser(server), started.body.user_code!, 'approve');
    advanceClock(6_000);
    const tokens = await send(pollReq!);
    expect(tokens.status).toBe(200);
    expect(tokens.body).toMatchObject({ token_type: 'bearer', scope: 'openid profile offline_access' });
    expect(tokens.body.refresh_token).toBeTruthy();
  });

  test('a user with a second factor gives it at /device too; the id_token says so', async () => {
    await server.user('mia', 'mia-password-1');
    // Enrol TOTP at the account page, as a user would.
    const jar = new CookieJar();
    const step = (res: Response) => {
      jar.store(res);
      return res;
    };
    const login = step(await get(`${server.url}/account`, {}, { cookie: jar.header() }));
    step(
      await postForm(
        `${server.url}/account`,
        { ...hiddenFields(await login.text()), username: 'mia', password: 'mia-password-1' },
        { cookie: jar.header() },
      ),
    );
    const enrol = await step(await get(`${server.url}/account/mfa/totp`, {}, { cookie: jar.header() })).text();
    const secret = textOf(enrol, 'totp-secret')!;
    expect(
      step(
        await postForm(
          `${server.url}/account/mfa/totp`,
          { ...hiddenFields(enrol), code: codeAt(secret, serverNow()) },
          { cookie: jar.header() },
        ),
      ).status,
    ).toBe(200);
    advanceClock(60_000); // a TOTP step the enrolment did not use

    const s = await start();
    const browser = new Browser(server);
    const page = await browser.authorize({ user_code: s.user_code }, '/device');
    const second = await browser.submit(page, { username: 'mia', password: 'mia-password-1' }, '/device');
    expect(second.status).toBe(200);
    const html = await second.text();
    expect(html).toContain('name="code"');
    const approval = await browser.submit(new Response(html), { code: codeAt(secret, serverNow()) }, '/device');
    expect(approval.status).toBe(200);
    expect(await approval.clone().text()).toContain('Dora CLI');
    expect((await browser.submit(approval, { decision: 'approve' }, '/device')).status).toBe(200);
    advanceClock(6_000);
    const tokens = await poll(s.device_code);
    expect(tokens.status).toBe(200);
    expect(decodeJwt(tokens.body.id_token!).amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  test('a client that may not use single sign-on gets no device code, in the codes it reads', async () => {
    const closed = await server.client({
      name: 'Closed CLI',
      confidential: false,
      grantTypes: [DEVICE],
      redirectUris: [],
      ssoEnabled: false,
    });
    const refused = await postForm(`${server.url}/oauth/v20/device_authorization`, { client_id: closed.clientId, scope: 'openid' });
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ error: 'app_unsupport_sso' });
    expect(body.device_code).toBeUndefined();
    const standard = await server.client({
      name: 'Closed CLI (RFC codes)',
      confidential: false,
      grantTypes: [DEVICE],
      redirectUris: [],
      ssoEnabled: false,
      errorCodes: 'rfc6749',
    });
    const rfc = await postForm(`${server.url}/oauth/v20/device_authorization`, { client_id: standard.clientId, scope: 'openid' });
    expect(rfc.status).toBe(400);
    expect(await rfc.json()).toMatchObject({ error: 'unauthorized_client' });
    expect(await server.sql('device_codes').whereIn('client_id', [closed.clientId, standard.clientId])).toEqual([]);
    // Its code style applies from the moment the client is found, authentication's refusals included.
    const off = await server.client({
      name: 'Off CLI (RFC codes)',
      confidential: false,
      grantTypes: [DEVICE],
      redirectUris: [],
      oauthEnabled: false,
      errorCodes: 'rfc6749',
    });
    const offAnswer = await postForm(`${server.url}/oauth/v20/device_authorization`, { client_id: off.clientId, scope: 'openid' });
    expect(await offAnswer.json()).toMatchObject({ error: 'unauthorized_client' });
  });

  test('a client whose single sign-on is turned off after its code was issued is refused at /device before any sign-in, and it is audited', async () => {
    const closing = await server.client({ name: 'Closing CLI', confidential: false, grantTypes: [DEVICE], redirectUris: [] });
    const s = await start(closing.clientId, 'openid');
    await server.sql('clients').where({ client_id: closing.clientId }).update({ sso_enabled: false });
    const page = await new Browser(server).authorize({ user_code: s.user_code }, '/device');
    expect(page.status).toBe(403);
    const html = await page.text();
    expect(html).toContain('Closing CLI may not use single sign-on');
    expect(html).not.toContain('name="password"');
    const audited = await server.sql('audit_events').where({ kind: 'device.code_refused', client_id: closing.clientId });
    expect(audited.map((r) => JSON.parse(String(r.details)))).toEqual([{ reason: 'sso_disabled' }]);
    expect((await poll(s.device_code, closing.clientId)).body.error).toBe('authorization_pending');
  });

  test('forms without a CSRF token are refused; wrong user codes are throttled per address (429 after the limit) and audited', async () => {
    const s = await start();
    const browser = new Browser(server);
    const forged = await postForm(`${server.url}/device`, { user_code: s.user_code }, { cookie: browser.jar.header() });
    expect(forged.status).toBe(403);

    for (let i = 0; i < MAX_WRONG; i++) {
      const form = await browser.authorize({}, '/device');
      const wrong = await browser.submit(form, { user_code: 'BBBB-BBBB' }, '/device');
      expect(wrong.status).toBe(400);
      expect(await wrong.text()).toContain('not valid');
    }
    const form = await browser.authorize({}, '/device');
    const blocked = await browser.submit(form, { user_code: s.user_code }, '/device');
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await blocked.text()).toContain('Too many wrong codes');
    const audited = await server.sql('audit_events').where({ kind: 'device.code_refused' }).whereNull('client_id');
    const reasons = audited.map((r) => (JSON.parse(String(r.details)) as { reason: string }).reason);
    expect(reasons.filter((r) => r === 'unknown')).toHaveLength(MAX_WRONG);
    expect(reasons).toContain('throttled');
    expect(audited.every((r) => !!r.ip)).toBe(true);
    // The code typed is not kept.
    expect(JSON.stringify(audited)).not.toContain('BBBB');
  });
});
