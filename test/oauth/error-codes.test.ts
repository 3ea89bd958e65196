import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oidc from 'openid-client';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { advanceClock } from '../helpers/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** docs/connect-an-application.md: a client registered for RFC 6749 codes reads them; a MaxKey client keeps the document's. */
describe.each(databaseKinds)('client error codes on %s', (kind) => {
  let server: TestServer;
  let tokenUrl: string;
  const grantTypes = ['authorization_code' as const, 'password' as const, 'refresh_token' as const];

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('carol', 'carol-password-1');
    tokenUrl = `${server.url}/oauth/v20/token`;
  });
  afterAll(() => server.stop());

  async function expectError(res: Response, code: string, status = 400) {
    expect(res.status).toBe(status);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.error).toBe(code);
    expect(typeof body.error_description).toBe('string');
  }

  const passwordGrant = (app: { clientId: string; clientSecret: string | null }) =>
    postForm(
      tokenUrl,
      { grant_type: 'password', username: 'carol', password: 'carol-password-1' },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );

  /** The same failures in both styles. */
  test.each([
    ['rfc6749', 'invalid_grant', 'invalid_grant', 'unsupported_grant_type', 'invalid_grant', 'invalid_request'],
    ['maxkey', 'invalid_code', 'invalid_refresh_token', 'invalid_grant_type', 'redirect_uri_mismatch', 'empty_code'],
  ] as const)(
    '%s: replayed code, reused refresh token, unknown grant type, redirect mismatch, no code',
    async (style, replayed, reused, grantType, mismatch, noCode) => {
      const app = await server.client({ grantTypes, errorCodes: style });
      const browser = new Browser(server);
      const { code } = await obtainCode(browser, app, 'carol', 'carol-password-1');
      const first = await exchangeCode(server, app, code!);
      expect(first.status).toBe(200);
      await expectError(await exchangeCode(server, app, code!), replayed);

      const { refresh_token } = (await (await passwordGrant(app)).json()) as { refresh_token: string };
      const auth = { authorization: basic(app.clientId, app.clientSecret!) };
      expect((await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token }, auth)).status).toBe(200);
      await expectError(await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token }, auth), reused);

      await expectError(await postForm(tokenUrl, { grant_type: 'urn:example:magic' }, auth), grantType);
      // Signed in already: the next authorize redirects with a code straight away.
      const again = await browser.authorize({ client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', state: 's' });
      const code2 = new URL(again.headers.get('location')!).searchParams.get('code');
      await expectError(await exchangeCode(server, app, code2!, { redirect_uri: 'http://localhost:3000/elsewhere' }), mismatch);
      await expectError(await postForm(tokenUrl, { grant_type: 'authorization_code', redirect_uri: app.redirectUri }, auth), noCode);
    },
  );

  test('rfc6749: a confidential client without its secret is invalid_client (401); an unknown client keeps the document code', async () => {
    const app = await server.client({ grantTypes, errorCodes: 'rfc6749' });
    await expectError(await postForm(tokenUrl, { grant_type: 'password', client_id: app.clientId }), 'invalid_client', 401);
    await expectError(await postForm(tokenUrl, { grant_type: 'password', client_id: 'no-such-client' }), 'invalid_client_id', 401);
  });

  test('rfc6749: a client without the refresh grant gets unauthorized_client; maxkey unsupported_refresh_token', async () => {
    const rfc = await server.client({ grantTypes: ['password'], errorCodes: 'rfc6749' });
    const maxkey = await server.client({ grantTypes: ['password'] });
    for (const [app, code] of [
      [rfc, 'unauthorized_client'],
      [maxkey, 'unsupported_refresh_token'],
    ] as const) {
      await expectError(
        await postForm(
          tokenUrl,
          { grant_type: 'refresh_token', refresh_token: 'x' },
          { authorization: basic(app.clientId, app.clientSecret!) },
        ),
        code,
      );
    }
  });

  test('at me and userinfo: an expired token of an rfc6749 client is invalid_token; an unknown token keeps invalid_access_token', async () => {
    const rfc = await server.client({ grantTypes: ['password'], accessTokenTtl: 1, errorCodes: 'rfc6749' });
    const maxkey = await server.client({ grantTypes: ['password'], accessTokenTtl: 1 });
    const rfcToken = ((await (await passwordGrant(rfc)).json()) as { access_token: string }).access_token;
    const maxkeyToken = ((await (await passwordGrant(maxkey)).json()) as { access_token: string }).access_token;
    advanceClock(1100);
    for (const path of ['/api/oauth/v20/me', '/connect/v10/userinfo']) {
      const expired = await get(`${server.url}${path}`, {}, { authorization: `Bearer ${rfcToken}` });
      expect(expired.headers.get('www-authenticate')).toMatch(/^Bearer .*error="invalid_token"/);
      await expectError(expired, 'invalid_token', 401);
      const old = await get(`${server.url}${path}`, {}, { authorization: `Bearer ${maxkeyToken}` });
      expect(old.headers.get('www-authenticate')).toMatch(/error="access_token_exprise"/);
      await expectError(old, 'access_token_exprise', 401);
      // An unknown token names no client, so no client's style can apply: the document's code.
      await expectError(await get(`${server.url}${path}`, {}, { authorization: 'Bearer forged' }), 'invalid_access_token', 401);
    }
  });

  test('at authorize, errors sent back by redirect are RFC codes for an rfc6749 client', async () => {
    const rfc = await server.client({ grantTypes, errorCodes: 'rfc6749', ssoEnabled: false });
    const maxkey = await server.client({ grantTypes, ssoEnabled: false });
    for (const [app, noSso] of [
      [rfc, 'unauthorized_client'],
      [maxkey, 'app_unsupport_sso'],
    ] as const) {
      const sso = await get(`${server.url}/oauth/v20/authorize`, {
        client_id: app.clientId,
        redirect_uri: app.redirectUri,
        state: 's',
        response_type: 'code',
      });
      expect(new URL(sso.headers.get('location')!).searchParams.get('error')).toBe(noSso);
    }
    const open = await server.client({ grantTypes, errorCodes: 'rfc6749' });
    const q = { client_id: open.clientId, redirect_uri: open.redirectUri, state: 's' };
    const noType = await get(`${server.url}/oauth/v20/authorize`, q);
    expect(new URL(noType.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
    const badType = await get(`${server.url}/oauth/v20/authorize`, { ...q, response_type: 'magic' });
    expect(new URL(badType.headers.get('location')!).searchParams.get('error')).toBe('unsupported_response_type');
  });

  test.each([
    ['rfc6749', 'invalid_client', 'unauthorized_client', 401],
    ['maxkey', 'empty_client_secret', 'app_unsupport_oauth', 400],
  ] as const)(
    '%s at introspection and revocation: no secret is %s, a client without OAuth %s',
    async (style, noSecret, noOauth, noSecretStatus) => {
      const app = await server.client({ grantTypes, errorCodes: style });
      const off = await server.client({ grantTypes, errorCodes: style, oauthEnabled: false });
      for (const path of ['/oauth/v20/introspect', '/oauth/v20/revoke']) {
        await expectError(await postForm(`${server.url}${path}`, { token: 'x', client_id: app.clientId }), noSecret, noSecretStatus);
        await expectError(
          await postForm(`${server.url}${path}`, { token: 'x' }, { authorization: basic(off.clientId, off.clientSecret!) }),
          noOauth,
        );
        // An unknown client names no style: the document's code.
        await expectError(await postForm(`${server.url}${path}`, { token: 'x', client_id: 'no-such-client' }), 'invalid_client_id', 401);
      }
    },
  );

  test('openid-client 6 sees invalid_grant as a ResponseBodyError on a reused refresh token', async () => {
    const app = await server.client({ grantTypes, errorCodes: 'rfc6749' });
    const config = await oidc.discovery(new URL(server.url), app.clientId, app.clientSecret!, undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    const { refresh_token } = (await (await passwordGrant(app)).json()) as { refresh_token: string };
    await oidc.refreshTokenGrant(config, refresh_token);
    const err = await oidc.refreshTokenGrant(config, refresh_token).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(oidc.ResponseBodyError);
    expect((err as oidc.ResponseBodyError).error).toBe('invalid_grant');
  });
});
