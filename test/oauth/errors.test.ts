import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { basic, get, locationQuery, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { advanceClock } from '../helpers/clock.ts';

/** One test per code of the interface document (section 7.2), in its shape: page, redirect or JSON. */
describe.each(databaseKinds)('the document error codes on %s', (kind) => {
  let server: TestServer;
  let app: { clientId: string; clientSecret: string | null; redirectUri: string };
  let authorizeUrl: string;
  let tokenUrl: string;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('bob', 'bob-password-1');
    app = await server.client({ grantTypes: ['authorization_code', 'password', 'refresh_token'] });
    authorizeUrl = `${server.url}/oauth/v20/authorize`;
    tokenUrl = `${server.url}/oauth/v20/token`;
  });
  afterAll(() => server.stop());

  /** Errors before client and redirect URI are verified: an HTML page, HTTP 400, never a redirect. */
  async function expectErrorPage(res: Response, code: string) {
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toContain(`<code id="error">${code}</code>`);
  }

  async function expectRedirectError(res: Response, code: string) {
    expect(res.status).toBe(302);
    expect(res.headers.get('location')!.startsWith(`${app.redirectUri}?`)).toBe(true);
    const q = locationQuery(res);
    expect(q.error).toBe(code);
    expect(q.error_description).toBeTruthy();
    expect(q.state).toBe('st');
  }

  async function expectJsonError(res: Response, code: string, status = 400) {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.error).toBe(code);
    expect(typeof body.error_description).toBe('string');
  }

  const authorize = (q: Record<string, string | undefined>) =>
    get(authorizeUrl, { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', state: 'st', ...q });

  const token = (fields: Record<string, string | undefined>) =>
    postForm(tokenUrl, { client_id: app.clientId, client_secret: app.clientSecret!, ...fields });

  test('1 empty_client_id', async () => {
    await expectErrorPage(await authorize({ client_id: undefined }), 'empty_client_id');
    await expectJsonError(await postForm(tokenUrl, { grant_type: 'password', username: 'bob', password: 'x' }), 'empty_client_id');
  });

  test('2 empty_client_secret', async () => {
    await expectJsonError(
      await token({ client_secret: undefined, grant_type: 'password', username: 'bob', password: 'bob-password-1' }),
      'empty_client_secret',
    );
  });

  test('3 empty_redirect_uri', async () => {
    await expectErrorPage(await authorize({ redirect_uri: undefined }), 'empty_redirect_uri');
    await expectJsonError(await token({ grant_type: 'authorization_code', code: 'abc' }), 'empty_redirect_uri');
  });

  test('4 empty_response_type', async () => {
    await expectRedirectError(await authorize({ response_type: undefined }), 'empty_response_type');
  });

  test('5 empty_code', async () => {
    await expectJsonError(await token({ grant_type: 'authorization_code', redirect_uri: app.redirectUri }), 'empty_code');
  });

  test('6 app_unsupport_sso', async () => {
    const noSso = await server.client({ ssoEnabled: false, grantTypes: ['authorization_code', 'password'] });
    const res = await get(authorizeUrl, { client_id: noSso.clientId, redirect_uri: noSso.redirectUri, response_type: 'code', state: 'st' });
    expect(locationQuery(res)).toMatchObject({ error: 'app_unsupport_sso', state: 'st' });
    // The password grant is what such a client is for.
    const pw = await postForm(
      tokenUrl,
      { grant_type: 'password', username: 'bob', password: 'bob-password-1' },
      { authorization: basic(noSso.clientId, noSso.clientSecret!) },
    );
    expect(pw.status).toBe(200);
  });

  test('7 app_unsupport_oauth', async () => {
    const off = await server.client({ oauthEnabled: false, grantTypes: ['authorization_code', 'password'] });
    const res = await postForm(
      tokenUrl,
      { grant_type: 'password', username: 'bob', password: 'bob-password-1' },
      { authorization: basic(off.clientId, off.clientSecret!) },
    );
    await expectJsonError(res, 'app_unsupport_oauth');
    const page = await get(authorizeUrl, { client_id: off.clientId, redirect_uri: off.redirectUri, response_type: 'code', state: 'st' });
    expect(locationQuery(page).error).toBe('app_unsupport_oauth');
  });

  test('8 invalid_client_id', async () => {
    await expectErrorPage(await authorize({ client_id: 'no-such-client' }), 'invalid_client_id');
    await expectJsonError(await token({ client_id: 'no-such-client', grant_type: 'password' }), 'invalid_client_id', 401);
  });

  test('9 invalid_response_type', async () => {
    await expectRedirectError(await authorize({ response_type: 'banana' }), 'invalid_response_type');
  });

  test('10 invalid_scope', async () => {
    await expectRedirectError(await authorize({ scope: 'openid admin:everything' }), 'invalid_scope');
    await expectJsonError(
      await token({ grant_type: 'password', username: 'bob', password: 'bob-password-1', scope: 'root' }),
      'invalid_scope',
    );
  });

  test('11 invalid_grant_type', async () => {
    await expectJsonError(await token({ grant_type: 'urn:example:magic' }), 'invalid_grant_type');
    await expectJsonError(await token({}), 'invalid_grant_type');
    await expectRedirectError(await authorize({ grant_type: 'password' }), 'invalid_grant_type');
  });

  test('12 redirect_uri_mismatch', async () => {
    await expectErrorPage(await authorize({ redirect_uri: `${app.redirectUri}/other` }), 'redirect_uri_mismatch');
    // Character for character: a trailing slash or different case is a mismatch too.
    await expectErrorPage(await authorize({ redirect_uri: app.redirectUri.replace('localhost', 'LOCALHOST') }), 'redirect_uri_mismatch');
  });

  test('13 unsupported_response_type', async () => {
    await expectRedirectError(await authorize({ response_type: 'token' }), 'unsupported_response_type');
    await expectRedirectError(await authorize({ response_type: 'id_token' }), 'unsupported_response_type');
  });

  test('14 invalid_code', async () => {
    await expectJsonError(
      await token({ grant_type: 'authorization_code', code: 'not-a-code', redirect_uri: app.redirectUri }),
      'invalid_code',
    );
    // A code issued to another client is invalid for this one.
    const other = await server.client();
    const q = await obtainCode(new Browser(server), other, 'bob', 'bob-password-1');
    await expectJsonError(await exchangeCode(server, app, q.code!), 'invalid_code');
  });

  test('15 unsupported_refresh_token', async () => {
    const noRefresh = await server.client({ grantTypes: ['authorization_code', 'password'] });
    const res = await postForm(
      tokenUrl,
      { grant_type: 'refresh_token', refresh_token: 'whatever' },
      { authorization: basic(noRefresh.clientId, noRefresh.clientSecret!) },
    );
    await expectJsonError(res, 'unsupported_refresh_token');
    // And its password grant issues no refresh token.
    const pw = await postForm(
      tokenUrl,
      { grant_type: 'password', username: 'bob', password: 'bob-password-1' },
      { authorization: basic(noRefresh.clientId, noRefresh.clientSecret!) },
    );
    expect((await pw.json()) as object).not.toHaveProperty('refresh_token');
  });

  test('16 access_token_exprise', async () => {
    const short = await server.client({ grantTypes: ['password'], accessTokenTtl: 1 });
    const res = await postForm(
      tokenUrl,
      { grant_type: 'password', username: 'bob', password: 'bob-password-1' },
      { authorization: basic(short.clientId, short.clientSecret!) },
    );
    const { access_token, expires_in } = (await res.json()) as { access_token: string; expires_in: number };
    expect(expires_in).toBe(1);
    advanceClock(1100);
    const me = await get(`${server.url}/api/oauth/v20/me`, { access_token });
    await expectJsonError(me, 'access_token_exprise', 401);
    expect(me.headers.get('www-authenticate')).toMatch(/^Bearer .*error="access_token_exprise"/);
  });

  test('17 invalid_access_token', async () => {
    const me = await get(`${server.url}/api/oauth/v20/me`, { access_token: 'forged' });
    await expectJsonError(me, 'invalid_access_token', 401);
    expect(me.headers.get('www-authenticate')).toMatch(/error="invalid_access_token"/);
    await expectJsonError(await get(`${server.url}/connect/v10/userinfo`), 'invalid_access_token', 401);
  });

  test('18 invalid_refresh_token', async () => {
    await expectJsonError(await token({ grant_type: 'refresh_token', refresh_token: 'forged' }), 'invalid_refresh_token');
  });

  test('19 refresh_token_exprise', async () => {
    const short = await server.client({ grantTypes: ['password', 'refresh_token'], refreshTokenTtl: 1 });
    const auth = { authorization: basic(short.clientId, short.clientSecret!) };
    const res = await postForm(tokenUrl, { grant_type: 'password', username: 'bob', password: 'bob-password-1' }, auth);
    const { refresh_token } = (await res.json()) as { refresh_token: string };
    advanceClock(1100);
    await expectJsonError(await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token }, auth), 'refresh_token_exprise');
  });

  test('RFC 6749 codes: invalid_client (401), invalid_grant, invalid_request, unauthorized_client', async () => {
    const wrong = await token({ client_secret: 'wrong', grant_type: 'password', username: 'bob', password: 'bob-password-1' });
    await expectJsonError(wrong, 'invalid_client', 401);
    const wrongBasic = await postForm(tokenUrl, { grant_type: 'password' }, { authorization: basic(app.clientId, 'wrong') });
    expect(wrongBasic.headers.get('www-authenticate')).toMatch(/^Basic/);
    await expectJsonError(wrongBasic, 'invalid_client', 401);
    await expectJsonError(await token({ grant_type: 'password', username: 'bob', password: 'nope' }), 'invalid_grant');
    await expectJsonError(await token({ grant_type: 'password', username: 'nobody', password: 'nope' }), 'invalid_grant');
    await expectJsonError(await token({ grant_type: 'client_credentials' }), 'unauthorized_client');
  });
});
