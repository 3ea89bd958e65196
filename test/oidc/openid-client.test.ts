import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oidc from 'openid-client';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import { basic, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** A stock client library configured from discovery alone (docs/endpoints.md). */
describe.each(databaseKinds)('openid-client against discovery on %s', (kind) => {
  let server: TestServer;
  let userId: string;
  const redirectUri = 'http://localhost:3000/cb';

  beforeAll(async () => {
    server = await startTestServer(kind);
    userId = await server.user('heidi', 'heidi-password-1', { email: 'heidi@example.org', displayName: 'Heidi' });
  });
  afterAll(() => server.stop());

  async function configFor(clientId: string, secret: string) {
    return oidc.discovery(new URL(server.url), clientId, secret, undefined, { execute: [oidc.allowInsecureRequests] });
  }

  test('code flow with PKCE, nonce and state; id_token validated; userinfo; refresh; introspect; revoke', async () => {
    const app = await server.client({ redirectUris: [redirectUri], postLogoutRedirectUris: ['http://localhost:3000/bye'] });
    const config = await configFor(app.clientId, app.clientSecret!);
    expect(config.serverMetadata().issuer).toBe(server.ctx.config.publicUrl);

    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const browser = new Browser(server);
    const back = await browser.signIn(Object.fromEntries(url.searchParams), 'heidi', 'heidi-password-1');
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.headers.get('location')!), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    expect(claims.sub).toBe(userId);
    expect(claims.email).toBe('heidi@example.org');
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(info).toMatchObject({ sub: userId, preferred_username: 'heidi', email: 'heidi@example.org' });

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);

    const active = await oidc.tokenIntrospection(config, refreshed.access_token);
    expect(active).toMatchObject({ active: true, client_id: app.clientId, sub: userId });
    await oidc.tokenRevocation(config, refreshed.access_token);
    expect((await oidc.tokenIntrospection(config, refreshed.access_token)).active).toBe(false);

    // RP-initiated logout ends SSO: the next authorize asks for the password again.
    const endUrl = oidc.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: 'http://localhost:3000/bye',
      state: 'bye',
    });
    const out = await fetch(endUrl, { redirect: 'manual', headers: { cookie: browser.jar.header() } });
    expect(out.status).toBe(302);
    expect(out.headers.get('location')).toBe('http://localhost:3000/bye?state=bye');
    browser.jar.store(out);
    const again = await browser.authorize(Object.fromEntries(url.searchParams));
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('name="password"');
  });

  test("introspection shows a client only its own tokens; revoking another client's token is refused", async () => {
    const a = await server.client({ grantTypes: ['password'] });
    const b = await server.client({ grantTypes: ['password'] });
    const res = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username: 'heidi', password: 'heidi-password-1' },
      { authorization: basic(a.clientId, a.clientSecret!) },
    );
    const { access_token } = (await res.json()) as { access_token: string };
    const own = await postForm(
      `${server.url}/oauth/v20/introspect`,
      { token: access_token },
      { authorization: basic(a.clientId, a.clientSecret!) },
    );
    expect(((await own.json()) as { active: boolean }).active).toBe(true);
    const foreign = await postForm(
      `${server.url}/oauth/v20/introspect`,
      { token: access_token },
      { authorization: basic(b.clientId, b.clientSecret!) },
    );
    expect(await foreign.json()).toEqual({ active: false });
    const revoke = await postForm(
      `${server.url}/oauth/v20/revoke`,
      { token: access_token },
      { authorization: basic(b.clientId, b.clientSecret!) },
    );
    expect(revoke.status).toBe(400);
    expect(((await revoke.json()) as { error: string }).error).toBe('unauthorized_client');
    const unauth = await postForm(
      `${server.url}/oauth/v20/introspect`,
      { token: access_token },
      { authorization: basic(a.clientId, 'wrong') },
    );
    expect(unauth.status).toBe(401);

    // A client with the admin role may read and revoke any client's tokens.
    const admin = await server.client({ grantTypes: ['client_credentials'], roles: ['admin'] });
    const seen = await postForm(
      `${server.url}/oauth/v20/introspect`,
      { token: access_token },
      { authorization: basic(admin.clientId, admin.clientSecret!) },
    );
    expect(await seen.json()).toMatchObject({ active: true, client_id: a.clientId });
    const revoked = await postForm(
      `${server.url}/oauth/v20/revoke`,
      { token: access_token },
      { authorization: basic(admin.clientId, admin.clientSecret!) },
    );
    expect(revoked.status).toBe(200);
    const gone = await postForm(
      `${server.url}/oauth/v20/introspect`,
      { token: access_token },
      { authorization: basic(a.clientId, a.clientSecret!) },
    );
    expect(await gone.json()).toEqual({ active: false });
  });

  test('logout redirects only to a registered post_logout_redirect_uri', async () => {
    const app = await server.client({ postLogoutRedirectUris: ['http://localhost:3000/bye'] });
    const res = await fetch(
      `${server.url}/connect/v10/logout?client_id=${app.clientId}&post_logout_redirect_uri=${encodeURIComponent('https://evil.example/')}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });
});
