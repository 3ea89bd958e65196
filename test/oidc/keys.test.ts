import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { advanceClock, serverNow } from '../helpers/clock.ts';

type Tokens = { access_token: string; refresh_token?: string; id_token?: string };
type Key = { kid: string; algorithm: string; activatesAt: string; retiredAt: string | null; signing: boolean };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Signing keys (RS256 and ES256), rotation without downtime, and JWT access tokens (docs/endpoints.md). */
describe.each(databaseKinds)('signing keys and token formats on %s', (kind) => {
  let server: TestServer;
  let adminToken: string;

  const graphql = async <T>(query: string, variables: Record<string, unknown> = {}, s: TestServer = server): Promise<T> => {
    const res = await fetch(`${s.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data: T; errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  const register = async (input: Record<string, unknown>) =>
    (
      await graphql<{ registerClient: { client: { clientId: string }; clientSecret: string } }>(
        'mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId } clientSecret } }',
        {
          input: {
            name: 'App',
            redirectUris: ['http://localhost:3000/cb'],
            grantTypes: ['PASSWORD', 'REFRESH_TOKEN', 'AUTHORIZATION_CODE'],
            scopes: ['openid', 'profile', 'email'],
            ...input,
          },
        },
      )
    ).registerClient;
  const passwordGrant = async (c: { client: { clientId: string }; clientSecret: string }, s: TestServer = server) => {
    const res = await postForm(
      `${s.url}/oauth/v20/token`,
      { grant_type: 'password', username: 'heidi', password: 'heidi-password-1', scope: 'openid profile email' },
      { authorization: basic(c.client.clientId, c.clientSecret) },
    );
    expect(res.status).toBe(200);
    return (await res.json()) as Tokens;
  };
  const jwks = (s: TestServer = server) => createRemoteJWKSet(new URL(`${s.url}/connect/v10/jwks`));
  const publishedKids = async (s: TestServer = server) =>
    ((await (await get(`${s.url}/connect/v10/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid);

  beforeAll(async () => {
    server = await startTestServer(kind, { keys: { publishDelay: 2 } });
    await server.user('heidi', 'heidi-password-1', { email: 'heidi@example.org' });
    const res = await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'password',
      client_id: 'admin-cli',
      username: 'admin',
      password: 'admin-password-for-tests',
    });
    adminToken = ((await res.json()) as Tokens).access_token;
  });
  afterAll(() => server?.stop());

  test('discovery names both algorithms; the JWKS publishes an RS256 and an ES256 key', async () => {
    const meta = (await (await get(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(meta.id_token_signing_alg_values_supported).toEqual(['RS256', 'ES256']);
    const { keys } = (await (await get(`${server.url}/connect/v10/jwks`)).json()) as { keys: Array<Record<string, string>> };
    expect(keys.map((k) => [k.alg, k.kty, k.use])).toEqual(
      expect.arrayContaining([
        ['RS256', 'RSA', 'sig'],
        ['ES256', 'EC', 'sig'],
      ]),
    );
    for (const k of keys) expect(k).not.toHaveProperty('d'); // never a private part
  });

  test('a client registered for ES256 gets ES256 id_tokens, which openid-client, told to expect ES256, accepts', async () => {
    const c = await register({ idTokenAlg: 'ES256' });
    const t = await passwordGrant(c);
    expect(decodeProtectedHeader(t.id_token!).alg).toBe('ES256');
    await jwtVerify(t.id_token!, jwks(), { issuer: server.url, audience: c.client.clientId });

    const config = await oidc.discovery(
      new URL(server.url),
      c.client.clientId,
      { client_secret: c.clientSecret, id_token_signed_response_alg: 'ES256' },
      undefined,
      { execute: [oidc.allowInsecureRequests] },
    );
    const refreshed = await oidc.refreshTokenGrant(config, t.refresh_token!);
    expect(refreshed.claims()?.email).toBe('heidi@example.org');
  });

  test('JWT access tokens (RFC 9068): verifiable with the JWKS, accepted at me and userinfo, revocable, at most 24 h', async () => {
    const c = await register({ accessTokenFormat: 'JWT', accessTokenTtl: 7 * 24 * 3600 });
    const t = await passwordGrant(c);
    const { payload, protectedHeader } = await jwtVerify(t.access_token, jwks(), {
      issuer: server.url,
      audience: `${server.url}/connect/v10/userinfo`,
      typ: 'at+jwt',
    });
    expect(protectedHeader.alg).toBe('RS256');
    expect(payload).toMatchObject({ client_id: c.client.clientId, scope: 'openid profile email' });
    expect(typeof payload.jti).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(24 * 3600);

    const me = (await (await get(`${server.url}/api/oauth/v20/me`, {}, { authorization: `Bearer ${t.access_token}` })).json()) as Record<
      string,
      unknown
    >;
    expect(me).toMatchObject({ userid: payload.sub, uid: 'heidi' });
    expect((await get(`${server.url}/connect/v10/userinfo`, { access_token: t.access_token })).status).toBe(200);

    const revoke = await postForm(
      `${server.url}/oauth/v20/revoke`,
      { token: t.access_token },
      { authorization: basic(c.client.clientId, c.clientSecret) },
    );
    expect(revoke.status).toBe(200);
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: t.access_token })).status).toBe(401);
  });

  test('rotation: the new key is published before it signs; tokens signed before still verify; then the new key signs', async () => {
    const rs = await register({});
    const jwtClient = await register({ accessTokenFormat: 'JWT' });
    const before = await passwordGrant(rs);
    const beforeJwt = await passwordGrant(jwtClient);
    const oldKid = decodeProtectedHeader(before.id_token!).kid;

    const { rotateSigningKeys } = await graphql<{ rotateSigningKeys: Key[] }>(
      'mutation { rotateSigningKeys(algorithms: [RS256]) { kid algorithm activatesAt retiredAt signing } }',
    );
    expect(rotateSigningKeys).toHaveLength(1);
    const fresh = rotateSigningKeys[0]!;
    expect(fresh).toMatchObject({ algorithm: 'RS256', signing: false, retiredAt: null });

    // Published at once, not yet signing.
    expect(await publishedKids()).toEqual(expect.arrayContaining([oldKid, fresh.kid]));
    const during = await passwordGrant(rs);
    expect(decodeProtectedHeader(during.id_token!).kid).toBe(oldKid);

    advanceClock(Date.parse(fresh.activatesAt) - serverNow() + 100);
    const after = await passwordGrant(rs);
    expect(decodeProtectedHeader(after.id_token!).kid).toBe(fresh.kid);

    // Everything signed before the rotation still verifies against the JWKS, and still works here.
    const set = jwks();
    for (const jwt of [before.id_token!, during.id_token!, after.id_token!, beforeJwt.id_token!, beforeJwt.access_token])
      await jwtVerify(jwt, set, { issuer: server.url });
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: beforeJwt.access_token })).status).toBe(200);
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: before.access_token })).status).toBe(200);

    const { signingKeys } = await graphql<{ signingKeys: Key[] }>('{ signingKeys { kid algorithm retiredAt signing } }');
    expect(signingKeys.find((k) => k.kid === oldKid)).toMatchObject({ signing: false, retiredAt: expect.any(String) });
    expect(
      signingKeys
        .filter((k) => k.signing)
        .map((k) => k.algorithm)
        .sort(),
    ).toEqual(['ES256', 'RS256']);
    expect(signingKeys.find((k) => k.signing && k.algorithm === 'RS256')!.kid).toBe(fresh.kid);

    // A stock client carries on across the rotation: its refresh gets an id_token from the new key.
    const config = await oidc.discovery(new URL(server.url), rs.client.clientId, rs.clientSecret, undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    const refreshed = await oidc.refreshTokenGrant(config, before.refresh_token!);
    expect(decodeProtectedHeader(refreshed.id_token!).kid).toBe(fresh.kid);
    expect(refreshed.claims()?.email).toBe('heidi@example.org');
  });

  test('rotation needs an admin', async () => {
    const c = await register({});
    const user = await passwordGrant(c);
    const res = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.access_token}` },
      body: JSON.stringify({ query: 'mutation { rotateSigningKeys { kid } }' }),
    });
    expect(res.status).toBe(403);
  });
});

describe('key rotation across processes and on schedule (PostgreSQL, two servers on one database)', () => {
  let a: TestServer;
  let b: TestServer;

  beforeAll(async () => {
    a = await startTestServer('postgres', { keys: { publishDelay: 4, reloadInterval: 1 } });
    b = await startTestServer('postgres', { databaseUrl: a.db.url, keys: { publishDelay: 4, reloadInterval: 1 } });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  test('a key rotated by one process is published by the other before either signs with it', async () => {
    const [created] = await b.ctx.keys.rotate(['RS256']);
    const deadline = created!.activatesAt;
    let seenByA = false;
    while (Date.now() < deadline && !seenByA) {
      seenByA = ((await (await get(`${a.url}/connect/v10/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.some(
        (k) => k.kid === created!.kid,
      );
      if (!seenByA) await sleep(200);
    }
    expect(seenByA).toBe(true);
    expect(Date.now()).toBeLessThan(created!.activatesAt);
  });

  test('keys older than keys.rotateEvery are rotated by the schedule', async () => {
    const s = await startTestServer('sqlite', { keys: { rotateEvery: 1, reloadInterval: 1, publishDelay: 0 } });
    try {
      const first = new Set(s.ctx.keys.list().map((k) => k.kid));
      await sleep(2500);
      const now = s.ctx.keys.list();
      expect(
        now
          .filter((k) => !first.has(k.kid))
          .map((k) => k.alg)
          .sort(),
      ).toEqual(expect.arrayContaining(['ES256', 'RS256']));
    } finally {
      await s.stop();
    }
  });
});
