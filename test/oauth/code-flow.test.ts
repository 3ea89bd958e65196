import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { basic, get, locationQuery, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

describe.each(databaseKinds)('authorization code flow on %s', (kind) => {
  let server: TestServer;
  let aliceId: string;

  beforeAll(async () => {
    server = await startTestServer(kind);
    aliceId = await server.user('alice', 'alice-password-1', {
      email: 'alice@example.org',
      displayName: 'Alice Liddell',
      groups: ['staff'],
    });
  });
  afterAll(() => server.stop());

  test('sign in, exchange the code, read the user at me and userinfo', async () => {
    const client = await server.client({ scopes: ['openid', 'profile', 'email', 'groups'] });
    const browser = new Browser(server);
    const page = await browser.authorize({
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: 'code',
      state: 'xyz',
      scope: 'openid profile email groups',
      nonce: 'n-0S6',
    });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const html = await page.clone().text();
    expect(html).toMatch(/<input[^>]+name="username"/);
    expect(html).toMatch(/<input[^>]+name="password"[^>]+type="password"|<input[^>]+type="password"[^>]+name="password"/);
    expect(html).toMatch(/name="csrf_token" value="[^"]{20,}"/);
    expect(html).not.toMatch(/https?:\/\/(?!localhost)[a-z]/i);

    const back = await browser.submit(page, { username: 'alice', password: 'alice-password-1' });
    expect(back.status).toBe(303);
    const location = new URL(back.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(client.redirectUri);
    const q = Object.fromEntries(location.searchParams);
    expect(q.code).toMatch(/^[\w-]{43}$/);
    expect(q.tokencode).toBe(q.code);
    expect(q.state).toBe('xyz');
    const sso = back.headers.getSetCookie().find((c) => c.startsWith('lk_sso='));
    expect(sso).toMatch(/HttpOnly/i);
    expect(sso).toMatch(/SameSite=Lax/i);

    const token = await exchangeCode(server, client, q.code!);
    expect(token.status).toBe(200);
    expect(token.headers.get('cache-control')).toBe('no-store');
    const body = (await token.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ token_type: 'bearer', expires_in: 3600, remind_in: 3600, scope: 'openid profile email groups' });
    expect(typeof body.access_token).toBe('string');
    expect(typeof body.refresh_token).toBe('string');

    const jwks = createRemoteJWKSet(new URL(`${server.url}/connect/v10/jwks`));
    const { payload } = await jwtVerify(body.id_token as string, jwks, { issuer: server.ctx.config.publicUrl, audience: client.clientId });
    expect(payload).toMatchObject({
      sub: aliceId,
      nonce: 'n-0S6',
      preferred_username: 'alice',
      email: 'alice@example.org',
      groups: ['staff'],
    });
    const atHash = createHash('sha256')
      .update(body.access_token as string)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
    expect(payload.at_hash).toBe(atHash);

    const me = await postForm(`${server.url}/api/oauth/v20/me`, { access_token: body.access_token as string });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({
      userid: aliceId,
      uid: 'alice',
      username: 'alice',
      displayName: 'Alice Liddell',
      email: 'alice@example.org',
      groups: ['staff'],
      client_id: client.clientId,
      scope: 'openid profile email groups',
    });

    const info = await get(`${server.url}/connect/v10/userinfo`, {}, { authorization: `Bearer ${body.access_token}` });
    expect(info.status).toBe(200);
    expect(await info.json()).toEqual({
      sub: aliceId,
      name: 'Alice Liddell',
      preferred_username: 'alice',
      email: 'alice@example.org',
      email_verified: true,
      groups: ['staff'],
    });
  });

  test('userinfo shows only the claims the scopes allow', async () => {
    const client = await server.client({ scopes: ['openid', 'profile', 'email'] });
    const q = await obtainCode(new Browser(server), client, 'alice', 'alice-password-1', { scope: 'openid' });
    const { access_token } = (await (await exchangeCode(server, client, q.code!)).json()) as { access_token: string };
    const info = await get(`${server.url}/connect/v10/userinfo`, { access_token });
    expect(await info.json()).toEqual({ sub: aliceId });
  });

  test("the document's reference example: form POST with tokencode and no grant_type", async () => {
    const client = await server.client();
    const q = await obtainCode(new Browser(server), client, 'alice', 'alice-password-1');
    const res = await postForm(`${server.url}/oauth/v20/token`, {
      tokencode: q.tokencode,
      client_id: client.clientId,
      client_secret: client.clientSecret!,
      redirect_uri: client.redirectUri,
    });
    expect(res.status).toBe(200);
    const { access_token } = (await res.json()) as { access_token: string };
    const me = await postForm(`${server.url}/api/oauth/v20/me`, { access_token });
    expect(((await me.json()) as { userid: string }).userid).toBe(aliceId);
  });

  test('single sign-on: a second client gets a code with no form', async () => {
    const first = await server.client();
    const second = await server.client({ redirectUris: ['https://second.example.com/cb'] });
    const browser = new Browser(server);
    await obtainCode(browser, first, 'alice', 'alice-password-1');
    const res = await browser.authorize({
      client_id: second.clientId,
      redirect_uri: second.redirectUri,
      response_type: 'code',
      state: 's2',
    });
    expect(res.status).toBe(302);
    const q = locationQuery(res);
    expect(res.headers.get('location')!.startsWith('https://second.example.com/cb?')).toBe(true);
    expect(q.state).toBe('s2');
    const token = await exchangeCode(server, second, q.code!);
    expect(token.status).toBe(200);
  });

  test('prompt=login asks again even with a session; prompt=none without one answers login_required', async () => {
    const client = await server.client();
    const browser = new Browser(server);
    await obtainCode(browser, client, 'alice', 'alice-password-1');
    const again = await browser.authorize({
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: 'code',
      prompt: 'login',
    });
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('name="password"');

    const stranger = new Browser(server);
    const none = await stranger.authorize({
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: 'code',
      prompt: 'none',
      state: 'q',
    });
    expect(none.status).toBe(302);
    expect(locationQuery(none)).toMatchObject({ error: 'login_required', state: 'q' });
  });

  test('consent is asked once per user and scope set, and again for a new scope', async () => {
    const client = await server.client({ requireConsent: true, scopes: ['openid', 'profile', 'email'] });
    const browser = new Browser(server);
    const base = { client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code' };
    const login = await browser.authorize({ ...base, scope: 'openid profile' });
    const consent = await browser.submit(login, { username: 'alice', password: 'alice-password-1' });
    expect(consent.status).toBe(200);
    const consentHtml = await consent.clone().text();
    expect(consentHtml).toContain('Allow access');
    expect(consentHtml).toContain('profile');
    const granted = await browser.submit(consent, { decision: 'allow' });
    expect(granted.status).toBe(303);
    expect(locationQuery(granted).code).toBeDefined();

    const subset = await browser.authorize({ ...base, scope: 'openid' });
    expect(subset.status).toBe(302);
    expect(locationQuery(subset).code).toBeDefined();

    const more = await browser.authorize({ ...base, scope: 'openid email', state: 'm' });
    expect(more.status).toBe(200);
    expect(await more.clone().text()).toContain('email');
    const denied = await browser.submit(more, { decision: 'deny' });
    expect(locationQuery(denied)).toMatchObject({ error: 'access_denied', state: 'm' });

    const silent = await browser.authorize({ ...base, scope: 'openid email', prompt: 'none' });
    expect(locationQuery(silent).error).toBe('consent_required');
  });

  test('PKCE S256 and plain; a public client needs it', async () => {
    const pub = await server.client({ confidential: false, allowPlainPkce: true });
    const verifier = `${'v'.repeat(20)}erifier-0123456789-abcdefghijklmn`;
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const browser = new Browser(server);

    const refused = await browser.authorize({ client_id: pub.clientId, redirect_uri: pub.redirectUri, response_type: 'code', state: 'p' });
    expect(locationQuery(refused)).toMatchObject({ error: 'invalid_request', state: 'p' });

    const q = await obtainCode(browser, pub, 'alice', 'alice-password-1', { code_challenge: challenge, code_challenge_method: 'S256' });
    const wrong = await exchangeCode(server, pub, q.code!, { code_verifier: 'x'.repeat(43) });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: string }).error).toBe('invalid_code');

    const q2 = await browser.authorize({
      client_id: pub.clientId,
      redirect_uri: pub.redirectUri,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const ok = await exchangeCode(server, pub, locationQuery(q2).code!, { code_verifier: verifier });
    expect(ok.status).toBe(200);

    const q3 = await browser.authorize({
      client_id: pub.clientId,
      redirect_uri: pub.redirectUri,
      response_type: 'code',
      code_challenge: verifier,
    });
    const missing = await exchangeCode(server, pub, locationQuery(q3).code!);
    expect(((await missing.json()) as { error: string }).error).toBe('invalid_code');
    const q4 = await browser.authorize({
      client_id: pub.clientId,
      redirect_uri: pub.redirectUri,
      response_type: 'code',
      code_challenge: verifier,
      code_challenge_method: 'plain',
    });
    expect((await exchangeCode(server, pub, locationQuery(q4).code!, { code_verifier: verifier })).status).toBe(200);
  });

  test('PKCE plain is refused, by redirect, from a client not registered for it (RFC 9700 2.1.1)', async () => {
    const pub = await server.client({ confidential: false });
    const verifier = 'v'.repeat(43);
    const browser = new Browser(server);
    for (const method of [{ code_challenge_method: 'plain' }, {}]) {
      const res = await browser.authorize({
        client_id: pub.clientId,
        redirect_uri: pub.redirectUri,
        response_type: 'code',
        state: 'pl',
        code_challenge: verifier,
        ...method,
      });
      expect(locationQuery(res)).toMatchObject({ error: 'invalid_request', state: 'pl' });
      expect(locationQuery(res).error_description).toContain('S256');
    }
    const meta = await (await get(`${server.url}/.well-known/openid-configuration`)).json();
    expect(meta.code_challenge_methods_supported).toEqual(['S256']);
  });

  test('a replayed code is refused and revokes the tokens it issued', async () => {
    const client = await server.client();
    const q = await obtainCode(new Browser(server), client, 'alice', 'alice-password-1');
    const first = (await (await exchangeCode(server, client, q.code!)).json()) as { access_token: string; refresh_token: string };
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: first.access_token })).status).toBe(200);

    const replay = await exchangeCode(server, client, q.code!);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: 'invalid_code' });
    const me = await get(`${server.url}/api/oauth/v20/me`, { access_token: first.access_token });
    expect(me.status).toBe(401);
    expect(((await me.json()) as { error: string }).error).toBe('invalid_access_token');
    const refresh = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'refresh_token', refresh_token: first.refresh_token },
      { authorization: basic(client.clientId, client.clientSecret!) },
    );
    expect(((await refresh.json()) as { error: string }).error).toBe('invalid_refresh_token');
  });

  test('MaxKey aliases under /sign answer like the document paths, GET and POST alike', async () => {
    const client = await server.client();
    const browser = new Browser(server);
    const page = await browser.authorize(
      { client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', state: 'a' },
      '/sign/authz/oauth/v20/authorize',
    );
    expect(page.status).toBe(200);
    const back = await browser.submit(page, { username: 'alice', password: 'alice-password-1' }, '/sign/authz/oauth/v20/authorize');
    const q = locationQuery(back);
    expect(q.state).toBe('a');
    const token = await get(`${server.url}/sign/authz/oauth/v20/token`, {
      grant_type: 'authorization_code',
      code: q.code,
      redirect_uri: client.redirectUri,
      client_id: client.clientId,
      client_secret: client.clientSecret!,
    });
    expect(token.status).toBe(200);
    const { access_token } = (await token.json()) as { access_token: string };
    const me = await get(`${server.url}/sign/api/oauth/v20/me`, { access_token });
    expect(((await me.json()) as { uid: string }).uid).toBe('alice');
    const info = await postForm(`${server.url}/sign/api/connect/v10/userinfo`, { token: access_token });
    expect(((await info.json()) as { sub: string }).sub).toBe(aliceId);
  });
});
