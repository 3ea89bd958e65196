import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as jose from 'jose';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { databaseKinds } from '../helpers/databases.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { basic, postForm } from '../helpers/http.ts';
import { spawnLatchkey } from '../helpers/latchkey-process.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/** docs/connect-an-application.md's "Clients without secrets" example, imports left off, as a function of its inputs. */
function readmeExample(): (
  oidcModule: unknown,
  importJWK: unknown,
  PRIVATE_JWK: JWK,
  ISSUER: string,
  CLIENT_ID: string,
) => Promise<string> {
  const readme = readFileSync(fileURLToPath(new URL('../../docs/connect-an-application.md', import.meta.url)), 'utf8');
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Clients without secrets')))![1]!;
  const body = block
    .split('\n')
    .filter((l) => !l.startsWith('import '))
    .join('\n');
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
  return new AsyncFunction('oidc', 'importJWK', 'PRIVATE_JWK', 'ISSUER', 'CLIENT_ID', `${body}\nreturn access_token;`);
}

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

async function keyPair(alg: 'RS256' | 'ES256') {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `${alg}-${randomUUID()}`;
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { privateKey, kid, jwk };
}

/** A tiny relying party's JWKS endpoint, and one that never answers. */
async function listen(app: express.Express): Promise<{ url: string; server: Server }> {
  const port = await freePort();
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return { url: `http://127.0.0.1:${port}`, server };
}

/** RFC 7523 claims as a client signs them; `over` changes any of them. */
function assertion(clientId: string, aud: string, over: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return { iss: clientId, sub: clientId, aud, jti: randomUUID(), iat: now, exp: now + 60, ...over };
}

describe.each(databaseKinds)('JWT client authentication on %s', (kind) => {
  let server: TestServer;
  let rs: Awaited<ReturnType<typeof keyPair>>;
  let es: Awaited<ReturnType<typeof keyPair>>;
  let jwksHost: { url: string; server: Server };
  const held: express.Response[] = [];

  beforeAll(async () => {
    server = await startTestServer(kind);
    [rs, es] = await Promise.all([keyPair('RS256'), keyPair('ES256')]);
    const app = express();
    app.get('/jwks', (_req, res) => void res.json({ keys: [rs.jwk] }));
    app.get('/garbage', (_req, res) => void res.type('json').send('{"keys": 7'));
    // Holds the request open past the server's timeout: it must answer without it.
    app.get('/hang', (_req, res) => void held.push(res));
    jwksHost = await listen(app);
  });
  afterAll(async () => {
    for (const r of held) r.destroy();
    jwksHost.server.closeAllConnections();
    await new Promise((r) => jwksHost.server.close(r));
    await server.stop();
  });

  const tokenUrl = () => `${server.url}/oauth/v20/token`;
  const keyClient = (keys: JWK[]) =>
    server.client({
      grantTypes: ['client_credentials'],
      redirectUris: [],
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwks: JSON.stringify({ keys }),
    });
  const configFor = (clientId: string, auth: oidc.ClientAuth) =>
    oidc.discovery(new URL(server.url), clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });
  const withAssertion = (signed: string, extra: Record<string, string> = {}) =>
    postForm(tokenUrl(), { grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: signed, ...extra });
  const sign = (claims: Record<string, unknown>, key: CryptoKey | Uint8Array, alg: string, kid?: string) =>
    new SignJWT(claims).setProtectedHeader({ alg, ...(kid ? { kid } : {}) }).sign(key);

  async function refused(res: Response) {
    expect(res.status).toBe(401);
    expect((await res.json()).error).toBe('invalid_client');
  }

  test('discovery lists the five methods and the algorithms', async () => {
    const meta = await (await fetch(`${server.url}/.well-known/openid-configuration`)).json();
    expect(meta.token_endpoint_auth_methods_supported).toEqual(
      expect.arrayContaining(['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt', 'none']),
    );
    expect(meta.token_endpoint_auth_signing_alg_values_supported).toEqual(
      expect.arrayContaining(['HS256', 'RS256', 'PS256', 'ES256', 'EdDSA']),
    );
    expect(meta.introspection_endpoint_auth_methods_supported).toContain('private_key_jwt');
  });

  test('openid-client with PrivateKeyJwt (RS256 and ES256 keys as jwks): client_credentials, then introspection', async () => {
    const app = await keyClient([rs.jwk, es.jwk]);
    expect(app.clientSecret).toBeNull();
    for (const k of [rs, es]) {
      const config = await configFor(app.clientId, oidc.PrivateKeyJwt({ key: k.privateKey, kid: k.kid }));
      const tokens = await oidc.clientCredentialsGrant(config);
      expect(tokens.access_token).toBeTruthy();
      const info = await oidc.tokenIntrospection(config, tokens.access_token);
      expect(info).toMatchObject({ active: true, client_id: app.clientId });
    }
  });

  test('openid-client with ClientSecretJwt; the secret is stored encrypted, not in plain text', async () => {
    const app = await server.client({ grantTypes: ['client_credentials'], redirectUris: [], tokenEndpointAuthMethod: 'client_secret_jwt' });
    const config = await configFor(app.clientId, oidc.ClientSecretJwt(app.clientSecret!));
    expect((await oidc.clientCredentialsGrant(config)).access_token).toBeTruthy();
    const stored = await server.ctx.clients.find(app.clientId);
    expect(stored!.secretEnc).toBeTruthy();
    expect(stored!.secretEnc).not.toContain(app.clientSecret);
    // A rotation writes the new secret; the old one no longer signs.
    const { clientSecret } = await server.ctx.clients.rotateSecret(app.clientId, { kind: 'cli' } as never);
    const old = await sign(assertion(app.clientId, server.ctx.config.publicUrl), new TextEncoder().encode(app.clientSecret!), 'HS256');
    await refused(await withAssertion(old));
    const fresh = await sign(assertion(app.clientId, server.ctx.config.publicUrl), new TextEncoder().encode(clientSecret), 'HS256');
    expect((await withAssertion(fresh)).status).toBe(200);
  });

  test('a jwksUri: served keys work; one that hangs or answers garbage is invalid_client within the timeout', async () => {
    const viaUri = await server.client({
      grantTypes: ['client_credentials'],
      redirectUris: [],
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksUri: `${jwksHost.url}/jwks`,
    });
    const config = await configFor(viaUri.clientId, oidc.PrivateKeyJwt({ key: rs.privateKey, kid: rs.kid }));
    expect((await oidc.clientCredentialsGrant(config)).access_token).toBeTruthy();
    for (const path of ['/hang', '/garbage']) {
      const bad = await server.client({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwksUri: `${jwksHost.url}${path}`,
      });
      const started = Date.now();
      await refused(await withAssertion(await sign(assertion(bad.clientId, tokenUrl()), rs.privateKey, 'RS256', rs.kid)));
      expect(Date.now() - started).toBeLessThan(5000);
    }
    expect(server.logs.some((l) => l.includes('client assertion refused'))).toBe(true);
  });

  test("the guide's example, as printed", async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const publicJwk = { ...(await exportJWK(publicKey)), kid: 'readme-key' };
    const app = await keyClient([publicJwk]);
    // The test server is http: the one change to the library, not to the example.
    const local = {
      ...oidc,
      discovery: (u: URL, id: string, m: undefined, a: oidc.ClientAuth) =>
        oidc.discovery(u, id, m, a, { execute: [oidc.allowInsecureRequests] }),
    };
    const token = await readmeExample()(
      local,
      jose.importJWK,
      { ...(await exportJWK(privateKey)), kid: 'readme-key' },
      server.url,
      app.clientId,
    );
    expect(typeof token).toBe('string');
    const info = await postForm(`${server.url}/oauth/v20/introspect`, { token }, { Authorization: basic(app.clientId, 'x') });
    expect(info.status).toBe(401); // its own method only, even at introspection
  });

  test('refused: replay, wrong aud, expired, too long-lived, iss≠sub, wrong key, a secret for a key client, garbage', async () => {
    const app = await keyClient([rs.jwk]);
    const aud = server.ctx.config.publicUrl;
    const once = await sign(assertion(app.clientId, tokenUrl()), rs.privateKey, 'RS256', rs.kid);
    expect((await withAssertion(once)).status).toBe(200);
    await refused(await withAssertion(once));
    // At another endpoint too: a jti is used once, wherever.
    const introspected = await postForm(`${server.url}/oauth/v20/introspect`, {
      token: 'x',
      client_assertion_type: JWT_BEARER,
      client_assertion: once,
    });
    expect(introspected.status).toBe(401);

    const now = Math.floor(Date.now() / 1000);
    for (const over of [
      { aud: 'https://elsewhere.example' },
      { exp: now - 60, iat: now - 120 },
      { exp: now + 3600 },
      { sub: 'someone-else' },
      { jti: undefined },
    ]) {
      await refused(await withAssertion(await sign(assertion(app.clientId, aud, over), rs.privateKey, 'RS256', rs.kid)));
    }
    await refused(await withAssertion(await sign(assertion(app.clientId, aud), es.privateKey, 'ES256', es.kid)));
    await refused(await withAssertion('not.a.jwt'));
    // Bytes a database would choke on, in the claims it looks up: still the interface's error.
    await refused(await withAssertion(await sign(assertion(`${app.clientId}\0`, aud), rs.privateKey, 'RS256', rs.kid)));
    await refused(await withAssertion(await sign(assertion(app.clientId, aud, { jti: 'a\0b' }), rs.privateKey, 'RS256', rs.kid)));
    await refused(await withAssertion(await sign(assertion(app.clientId, aud, { jti: 7 }), rs.privateKey, 'RS256', rs.kid)));
    await refused(await withAssertion(await sign(assertion(app.clientId, aud), new TextEncoder().encode('x'.repeat(32)), 'HS256')));
    await refused(await postForm(tokenUrl(), { grant_type: 'client_credentials' }, { Authorization: basic(app.clientId, 'anything') }));
    await refused(await postForm(tokenUrl(), { grant_type: 'client_credentials', client_id: app.clientId, client_secret: 'anything' }));
  });

  test('no method chosen: Basic or post; client_secret_basic chosen: not post, nor an assertion', async () => {
    const either = await server.client({ grantTypes: ['client_credentials'], redirectUris: [] });
    expect((await server.ctx.clients.find(either.clientId))!.tokenEndpointAuthMethod).toBeNull();
    expect(
      (await postForm(tokenUrl(), { grant_type: 'client_credentials' }, { Authorization: basic(either.clientId, either.clientSecret!) }))
        .status,
    ).toBe(200);
    expect(
      (await postForm(tokenUrl(), { grant_type: 'client_credentials', client_id: either.clientId, client_secret: either.clientSecret! }))
        .status,
    ).toBe(200);

    const app = await server.client({
      grantTypes: ['client_credentials'],
      redirectUris: [],
      tokenEndpointAuthMethod: 'client_secret_basic',
    });
    expect(
      (await postForm(tokenUrl(), { grant_type: 'client_credentials' }, { Authorization: basic(app.clientId, app.clientSecret!) })).status,
    ).toBe(200);
    await refused(
      await postForm(tokenUrl(), { grant_type: 'client_credentials', client_id: app.clientId, client_secret: app.clientSecret! }),
    );
    await refused(
      await withAssertion(await sign(assertion(app.clientId, tokenUrl()), new TextEncoder().encode(app.clientSecret!), 'HS256')),
    );
  });

  test('GraphQL: registered with an ES256 key, the client revokes its token with an assertion aimed at /revoke', async () => {
    const admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    const answer = await graphqlPost(
      server,
      admin,
      `mutation($jwks: String!) { registerClient(input: { name: "Keys", redirectUris: [], grantTypes: [CLIENT_CREDENTIALS],
        tokenEndpointAuthMethod: PRIVATE_KEY_JWT, jwks: $jwks }) { client { clientId tokenEndpointAuthMethod jwks jwksUri } clientSecret } }`,
      { jwks: JSON.stringify({ keys: [es.jwk] }) },
    );
    expect(answer.errors).toBeUndefined();
    const reg = (
      answer.data as {
        registerClient: { client: { clientId: string; tokenEndpointAuthMethod: string; jwksUri: null }; clientSecret: null };
      }
    ).registerClient;
    expect(reg).toMatchObject({ clientSecret: null, client: { tokenEndpointAuthMethod: 'PRIVATE_KEY_JWT', jwksUri: null } });
    const id = reg.client.clientId;
    const got = await withAssertion(await sign(assertion(id, tokenUrl()), es.privateKey, 'ES256', es.kid));
    const { access_token } = await got.json();
    const revokeUrl = `${server.url}/oauth/v20/revoke`;
    const revoked = await postForm(revokeUrl, {
      token: access_token,
      client_assertion_type: JWT_BEARER,
      client_assertion: await sign(assertion(id, revokeUrl), es.privateKey, 'ES256', es.kid),
    });
    expect(revoked.status).toBe(200);
    const info = await postForm(`${server.url}/oauth/v20/introspect`, {
      token: access_token,
      client_assertion_type: JWT_BEARER,
      client_assertion: await sign(assertion(id, tokenUrl()), es.privateKey, 'ES256', es.kid),
    });
    expect(await info.json()).toEqual({ active: false });
  });

  test('registration refuses unusable keys', async () => {
    const reg = (fields: Record<string, unknown>) =>
      server.client({ grantTypes: ['client_credentials'], redirectUris: [], tokenEndpointAuthMethod: 'private_key_jwt', ...fields });
    await expect(reg({})).rejects.toThrow(/jwks/);
    await expect(reg({ jwks: '{"keys": 3}' })).rejects.toThrow(/JSON Web Key Set/);
    await expect(reg({ jwks: JSON.stringify({ keys: [{ kty: 'oct', k: 'AAAA' }] }) })).rejects.toThrow(/cannot sign/);
    await expect(reg({ jwksUri: 'ftp://example.org/jwks' })).rejects.toThrow(/URL/);
  });

  test('a replay at a second Latchkey process on the same database is refused', async () => {
    const app = await keyClient([rs.jwk]);
    // A second node of one deployment, its own OS process (as `npm start` runs it): same database,
    // secret and public URL (the issuer an assertion names), its own port.
    const second = await spawnLatchkey({
      DATABASE_URL: server.db.url,
      LATCHKEY_SECRET: server.ctx.config.secret!,
      PUBLIC_URL: server.ctx.config.publicUrl,
    });
    try {
      const atSecond = (a: string) =>
        postForm(`${second.url}/oauth/v20/token`, {
          grant_type: 'client_credentials',
          client_assertion_type: JWT_BEARER,
          client_assertion: a,
        });
      const signed = await sign(assertion(app.clientId, tokenUrl()), rs.privateKey, 'RS256', rs.kid);
      expect((await withAssertion(signed)).status).toBe(200);
      const other = await sign(assertion(app.clientId, tokenUrl()), rs.privateKey, 'RS256', rs.kid);
      expect((await atSecond(other)).status).toBe(200);
      await refused(await atSecond(signed));
    } finally {
      await second.stop();
    }
  });
});
