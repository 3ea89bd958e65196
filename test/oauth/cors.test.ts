import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, obtainCode } from '../helpers/flow.ts';
import { basic, get, locationQuery, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/** docs/connect-an-application.md, browser apps: CORS on a client's endpoints for that client's web origins only. */
describe.each(databaseKinds)('CORS for browser apps on %s', (kind) => {
  let server: TestServer;
  let spa: { clientId: string; clientSecret: string | null; redirectUri: string };
  let backend: { clientId: string; clientSecret: string | null; redirectUri: string };

  const SPA = 'https://spa.example.com';
  const BACKEND = 'https://backend.example.com';
  const FOREIGN = 'https://evil.example.net';
  const acao = (res: Response) => res.headers.get('access-control-allow-origin');

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('alice', 'alice-password-1', { email: 'alice@example.org' });
    // The SPA's origin is its redirect URI's: the default.
    spa = await server.client({ confidential: false, redirectUris: [`${SPA}/callback`] });
    backend = await server.client({
      redirectUris: ['https://backend.example.com/cb'],
      webOrigins: [BACKEND, 'http://localhost:8080'],
      grantTypes: ['password', 'client_credentials'],
    });
  });
  afterAll(() => server.stop());

  const preflight = (path: string, origin: string) =>
    fetch(`${server.url}${path}`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });

  test('a preflight from a registered origin is a 204 with the CORS headers, on every client endpoint', async () => {
    for (const path of [
      '/oauth/v20/token',
      '/sign/authz/oauth/v20/token',
      '/oauth/v20/revoke',
      '/connect/v10/userinfo',
      '/sign/api/connect/v10/userinfo',
      '/api/oauth/v20/me',
      '/sign/api/oauth/v20/me',
    ]) {
      const res = await preflight(path, SPA);
      expect(res.status).toBe(204);
      expect(acao(res)).toBe(SPA);
      expect(res.headers.get('vary')).toContain('Origin');
      expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST');
      expect(res.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  test('a preflight from a foreign origin is a 204 without CORS headers; introspection has no CORS', async () => {
    const res = await preflight('/oauth/v20/token', FOREIGN);
    expect(res.status).toBe(204);
    expect(acao(res)).toBeNull();
    expect(res.headers.get('access-control-allow-methods')).toBeNull();
    const introspect = await preflight('/oauth/v20/introspect', SPA);
    expect(acao(introspect)).toBeNull();
    const answered = await postForm(
      `${server.url}/oauth/v20/introspect`,
      { token: 'x' },
      { origin: BACKEND, authorization: basic(backend.clientId, backend.clientSecret!) },
    );
    expect(answered.status).toBe(200);
    expect(acao(answered)).toBeNull();
  });

  test('a public client with PKCE exchanges its code from its own origin; another origin gets the same answer, unreadable', async () => {
    const verifier = 'cors-verifier-0123456789-abcdefghijklmnopqrstuvwxyz';
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const browser = new Browser(server);
    const pkce = { code_challenge: challenge, code_challenge_method: 'S256' };
    let signedIn = false;
    const exchange = async (origin: string) => {
      // Signed in once; the second authorization finds the session and redirects straight back.
      const q = signedIn
        ? locationQuery(await browser.authorize({ client_id: spa.clientId, redirect_uri: spa.redirectUri, response_type: 'code', ...pkce }))
        : await obtainCode(browser, spa, 'alice', 'alice-password-1', pkce);
      signedIn = true;
      return postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'authorization_code', code: q.code, redirect_uri: spa.redirectUri, client_id: spa.clientId, code_verifier: verifier },
        { origin },
      );
    };
    const allowed = await exchange(SPA);
    expect(allowed.status).toBe(200);
    expect(acao(allowed)).toBe(SPA);
    expect(allowed.headers.get('vary')).toContain('Origin');
    expect(allowed.headers.get('access-control-allow-credentials')).toBeNull();

    const foreign = await exchange(FOREIGN);
    expect(foreign.status).toBe(200);
    expect(acao(foreign)).toBeNull();

    // An error answered to the client's own origin is readable too.
    const bad = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'authorization_code', code: 'nope', redirect_uri: spa.redirectUri, client_id: spa.clientId, code_verifier: verifier },
      { origin: SPA },
    );
    expect(bad.status).toBe(400);
    expect(acao(bad)).toBe(SPA);
  });

  test('a confidential client: its web origins, not another client’s; a wrong secret is readable by its origin', async () => {
    const fields = { grant_type: 'client_credentials' };
    const auth = basic(backend.clientId, backend.clientSecret!);
    const own = await postForm(`${server.url}/oauth/v20/token`, fields, { origin: BACKEND, authorization: auth });
    expect(own.status).toBe(200);
    expect(acao(own)).toBe(BACKEND);
    const other = await postForm(`${server.url}/oauth/v20/token`, fields, { origin: SPA, authorization: auth });
    expect(other.status).toBe(200);
    expect(acao(other)).toBeNull();
    const wrong = await postForm(`${server.url}/oauth/v20/token`, fields, {
      origin: BACKEND,
      authorization: basic(backend.clientId, 'wrong'),
    });
    expect(wrong.status).toBe(401);
    expect(acao(wrong)).toBe(BACKEND);
  });

  test("userinfo and me: the token's client's origin, not another client's", async () => {
    const token = (await (
      await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: 'alice', password: 'alice-password-1', scope: 'openid email' },
        { authorization: basic(backend.clientId, backend.clientSecret!) },
      )
    ).json()) as { access_token: string };
    const bearer = { authorization: `Bearer ${token.access_token}` };
    for (const path of ['/connect/v10/userinfo', '/api/oauth/v20/me', '/sign/api/oauth/v20/me']) {
      const own = await get(`${server.url}${path}`, {}, { ...bearer, origin: 'http://localhost:8080' });
      expect(own.status).toBe(200);
      expect(acao(own)).toBe('http://localhost:8080');
      expect(own.headers.get('vary')).toContain('Origin');
      const other = await get(`${server.url}${path}`, {}, { ...bearer, origin: SPA });
      expect(other.status).toBe(200);
      expect(acao(other)).toBeNull();
    }
  });

  test('revocation answers its client’s origin only', async () => {
    const auth = basic(backend.clientId, backend.clientSecret!);
    const own = await postForm(`${server.url}/oauth/v20/revoke`, { token: 'unknown-token' }, { origin: BACKEND, authorization: auth });
    expect(own.status).toBe(200);
    expect(acao(own)).toBe(BACKEND);
    const foreign = await postForm(`${server.url}/oauth/v20/revoke`, { token: 'unknown-token' }, { origin: FOREIGN, authorization: auth });
    expect(foreign.status).toBe(200);
    expect(acao(foreign)).toBeNull();
  });

  test('discovery and JWKS are readable by any page', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', '/connect/v10/jwks']) {
      const res = await get(`${server.url}${path}`, {}, { origin: FOREIGN });
      expect(res.status).toBe(200);
      expect(acao(res)).toBe('*');
    }
  });

  test('webOrigins through GraphQL: the default from the redirect URIs, set, reset, and refused when not an origin', async () => {
    const admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    const registered = await graphqlPost(
      server,
      admin,
      'mutation { registerClient(input: { name: "Two", redirectUris: ["https://a.example.com/cb", "https://a.example.com/other", "http://localhost:5173/cb", "com.example.app:/cb"] }) { client { clientId webOrigins } } }',
    );
    const client = (registered.data as { registerClient: { client: { clientId: string; webOrigins: string[] } } }).registerClient.client;
    expect(client.webOrigins).toEqual(['https://a.example.com', 'http://localhost:5173']);
    expect(acao(await preflight('/oauth/v20/token', 'http://localhost:5173'))).toBe('http://localhost:5173');

    const updated = await graphqlPost(
      server,
      admin,
      `mutation { updateClient(clientId: "${client.clientId}", input: { webOrigins: ["https://app.example.com:8443"] }) { webOrigins } }`,
    );
    expect(updated.data).toEqual({ updateClient: { webOrigins: ['https://app.example.com:8443'] } });
    expect(acao(await preflight('/oauth/v20/token', 'https://app.example.com:8443'))).toBe('https://app.example.com:8443');
    expect(acao(await preflight('/oauth/v20/token', 'http://localhost:5173'))).toBeNull();

    const reset = await graphqlPost(
      server,
      admin,
      `mutation { updateClient(clientId: "${client.clientId}", input: { webOrigins: null }) { webOrigins } }`,
    );
    expect(reset.data).toEqual({ updateClient: { webOrigins: ['https://a.example.com', 'http://localhost:5173'] } });

    for (const bad of [
      'https://a.example.com/',
      'https://a.example.com/path',
      '*',
      'https://*.example.com',
      'ftp://a.example.com',
      'a.example.com',
    ]) {
      const refused = await graphqlPost(
        server,
        admin,
        'mutation($o: [String!]) { registerClient(input: { name: "Bad", redirectUris: ["https://b.example.com/cb"], webOrigins: $o }) { client { clientId } } }',
        { o: [bad] },
      );
      expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'webOrigins' });
    }
  });
});
