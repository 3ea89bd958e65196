import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import pino from 'pino';
import { loadUpstreams } from '../../src/identity/upstreams/registry.ts';
import { loadConfig } from '../../src/config/load.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { Receiver } from '../helpers/backchannel-receiver.ts';
import { advanceClock, resetClock } from '../helpers/clock.ts';
import { eventually, timed } from '../helpers/eventually.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { get, postForm } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * docs/decisions.md "Outbound fetches": what Latchkey calls on a client's or an upstream's word (a jwksUri, a
 * backchannelLogoutUri, an upstream's metadata) cannot be turned against the server or its network:
 * link-local and unspecified addresses are refused at registration and at connect time, config
 * `outbound.denyNetworks` adds more, redirects are not followed, answers are capped and timed, a
 * failed key fetch is not retried for 30 s, and no audit event repeats what an internal server said.
 */

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const LOGOUT = '/connect/v10/logout';
/** Short back-off, so a delivery is given up within the test. */
const FAST = { logout: { backchannelRetryDelays: [100, 100], backchannelPollInterval: 100 } };
const SECRET_TEXT = 'SECRET-INTERNAL-TEXT';

/** A relying party's server on a loopback port, with what the tests need to see of it. */
interface Stub {
  url: string;
  /** Requests per path. */
  hits: Map<string, number>;
  /** Bytes the endless answer handed to its socket, and whether the connection was closed on it. */
  endless: { sent: number; closed: boolean };
  close(): Promise<void>;
}

async function startStub(jwk: JWK): Promise<Stub> {
  const hits = new Map<string, number>();
  const endless = { sent: 0, closed: false };
  const app = express();
  app.use((req, _res, next) => {
    hits.set(req.path, (hits.get(req.path) ?? 0) + 1);
    next();
  });
  app.get('/jwks', (_req, res) => void res.json({ keys: [jwk] }));
  // A JWKS that never ends (stopped at 256 MiB, so a server that reads it all fails the test rather
  // than the machine): written as fast as the connection takes it.
  app.get('/endless', (_req, res) => {
    res.type('json');
    res.write('{"keys": [], "padding": "');
    const chunk = Buffer.alloc(64 * 1024, 'x');
    res.on('close', () => (endless.closed = true));
    const pump = () => {
      while (!res.destroyed && endless.sent < 256 * 1024 * 1024) {
        endless.sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end('"}');
    };
    pump();
  });
  // Says it will send 600 MiB: refused on the header alone.
  app.get('/declared-huge', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(600 * 1024 * 1024) });
    res.write('{"keys": [');
  });
  app.get('/fails', (_req, res) => void res.status(500).type('text').send(`${SECRET_TEXT}: stack trace of the internal server`));
  app.get('/moved', (_req, res) => void res.redirect(302, '/jwks'));
  app.post('/backchannel-500', (_req, res) => void res.status(500).type('text').send(`${SECRET_TEXT}: database password is hunter2`));
  app.get('/.well-known/openid-configuration', (_req, res) => void res.json({ issuer: 'x', padding: 'y'.repeat(100 * 1024) }));
  const port = await freePort();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    endless,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function keyPair() {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  return { privateKey, kid, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } as JWK };
}

const REGISTER =
  'mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId jwksUri backchannelLogoutUri roles } } }';
const UPDATE = 'mutation($c: ID!, $i: UpdateClientInput!) { updateClient(clientId: $c, input: $i) { clientId roles } }';

/**
 * A user signs in to a client whose back-channel logout URI is `uri`, then logs out: the details of
 * the audit event that records the final failed delivery (waited for).
 */
async function logoutFailingAt(
  server: TestServer,
  username: string,
  uri: string,
): Promise<{ app: { clientId: string }; failed: Record<string, unknown> }> {
  await server.user(username, `${username}-password-1`);
  const app = await server.client({ scopes: ['openid'], backchannelLogoutUri: uri, redirectUris: ['http://localhost:3000/cb'] });
  const browser = new Browser(server);
  const { code } = await obtainCode(browser, app, username, `${username}-password-1`, { scope: 'openid' });
  const { id_token } = (await (await exchangeCode(server, app, code!)).json()) as { id_token: string };
  await get(server.url + LOGOUT, { id_token_hint: id_token }, { cookie: browser.jar.header() });
  let failed: { details: string } | undefined;
  await eventually('the final failure is audited', async () => {
    failed = await server.sql('audit_events').where({ kind: 'logout.backchannel_failed', client_id: app.clientId }).first();
    return !!failed;
  });
  return { app, failed: JSON.parse(failed!.details) as Record<string, unknown> };
}

describe('outbound fetches (docs/decisions.md)', () => {
  let server: TestServer;
  let stub: Stub;
  let key: Awaited<ReturnType<typeof keyPair>>;
  let admin: string;

  beforeAll(async () => {
    key = await keyPair();
    [server, stub] = await Promise.all([startTestServer('sqlite', FAST), startStub(key.jwk)]);
    admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
  });
  afterAll(async () => {
    resetClock();
    await server?.stop();
    await stub?.close();
  });

  const tokenUrl = () => `${server.url}/oauth/v20/token`;
  const jwksClient = (jwksUri: string) =>
    server.client({ grantTypes: ['client_credentials'], redirectUris: [], tokenEndpointAuthMethod: 'private_key_jwt', jwksUri });
  /** A client_credentials request authenticated with an assertion signed by `signer` (kid unknown to a broken jwksUri). */
  async function assertionRequest(clientId: string, signer: { privateKey: CryptoKey; kid: string } = key): Promise<Response> {
    const now = Math.floor(Date.now() / 1000);
    const signed = await new SignJWT({ iss: clientId, sub: clientId, aud: tokenUrl(), jti: randomUUID(), iat: now, exp: now + 60 })
      .setProtectedHeader({ alg: 'RS256', kid: signer.kid })
      .sign(signer.privateKey);
    return postForm(tokenUrl(), { grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: signed });
  }
  async function invalidClient(res: Response): Promise<void> {
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: string; error_description?: string };
    expect(body.error).toBe('invalid_client');
    expect(JSON.stringify(body)).not.toContain(SECRET_TEXT);
  }

  test('private and loopback addresses stay allowed: a jwksUri on 127.0.0.1 serves the keys', async () => {
    const app = await jwksClient(`${stub.url}/jwks`);
    expect((await assertionRequest(app.clientId)).status).toBe(200);
  });

  test('a jwksUri streaming an endless answer: invalid_client at once, and the server stops reading past 64 KiB', async () => {
    const app = await jwksClient(`${stub.url}/endless`);
    const [res, ms] = await timed(() => assertionRequest(app.clientId));
    await invalidClient(res);
    // Well within the 2 s fetch timeout: cut off by size, not by time.
    expect(ms).toBeLessThan(1500);
    await eventually('the stub saw its connection closed', async () => stub.endless.closed);
    // What the kernel's socket buffers took before the cut: a tiny part of the 256 MiB on offer.
    expect(stub.endless.sent).toBeLessThan(32 * 1024 * 1024);
    expect(server.logs.some((l) => l.includes('answer larger than 64 KiB'))).toBe(true);

    const declared = await jwksClient(`${stub.url}/declared-huge`);
    await invalidClient(await assertionRequest(declared.clientId));
  });

  test('a failing jwksUri is fetched once: a second request within 30 s is invalid_client without a fetch; after 30 s it is tried again', async () => {
    const app = await jwksClient(`${stub.url}/fails`);
    await invalidClient(await assertionRequest(app.clientId));
    expect(stub.hits.get('/fails')).toBe(1);
    const [again, ms] = await timed(() => assertionRequest(app.clientId));
    await invalidClient(again);
    expect(ms).toBeLessThan(500);
    expect(stub.hits.get('/fails')).toBe(1);
    // The log says why in fixed words: the status, never the body.
    const lines = server.logs.filter((l) => l.includes(app.clientId));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines.join('\n')).not.toContain(SECRET_TEXT);

    advanceClock(31_000);
    await invalidClient(await assertionRequest(app.clientId));
    expect(stub.hits.get('/fails')).toBe(2);
  });

  test('a jwksUri answering 302 to a good JWKS is not followed (and counts as a failed fetch)', async () => {
    const before = stub.hits.get('/jwks') ?? 0;
    const app = await jwksClient(`${stub.url}/moved`);
    await invalidClient(await assertionRequest(app.clientId));
    await invalidClient(await assertionRequest(app.clientId));
    expect(stub.hits.get('/moved')).toBe(1);
    expect(stub.hits.get('/jwks') ?? 0).toBe(before);
  });

  test.each([
    'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
    'http://0.0.0.0:8080/jwks',
    'http://0/jwks',
    'http://2852039166/jwks',
    'http://[::ffff:169.254.169.254]/jwks',
    'http://[::ffff:0.0.0.0]/jwks',
    'http://[fe80::1]/jwks',
    'http://[::]/jwks',
    'https://169.254.10.20/jwks',
  ])('registration refuses %s as jwksUri and as backchannelLogoutUri, with BAD_USER_INPUT naming the field', async (uri) => {
    const asJwks = await graphqlPost(server, admin, REGISTER, {
      i: {
        name: 'Metadata thief',
        redirectUris: [],
        grantTypes: ['CLIENT_CREDENTIALS'],
        tokenEndpointAuthMethod: 'PRIVATE_KEY_JWT',
        jwksUri: uri,
      },
    });
    expect(asJwks.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'jwksUri' });
    expect(asJwks.errors![0]!.message).toMatch(/link-local|unspecified/);
    const asLogout = await graphqlPost(server, admin, REGISTER, {
      i: { name: 'Metadata thief', redirectUris: ['https://rp.example/cb'], backchannelLogoutUri: uri },
    });
    expect(asLogout.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'backchannelLogoutUri' });

    // Nor can a registered client be changed to one.
    const fine = await server.client({ redirectUris: ['https://rp.example/cb'] });
    const changed = await graphqlPost(server, admin, UPDATE, { c: fine.clientId, i: { backchannelLogoutUri: uri } });
    expect(changed.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'backchannelLogoutUri' });
    expect((await server.ctx.clients.find(fine.clientId))!.backchannelLogoutUri).toBeNull();
  });

  test('registration accepts private and loopback addresses and host names', async () => {
    for (const uri of [
      'http://10.1.2.3/jwks',
      'https://192.168.1.10/jwks',
      'http://127.0.0.1:9/jwks',
      'http://[::1]:9/jwks',
      'https://keys.corp.example/jwks',
    ]) {
      const made = await graphqlPost(server, admin, REGISTER, {
        i: { name: 'Intranet app', redirectUris: ['https://rp.example/cb'], backchannelLogoutUri: uri },
      });
      expect(made.errors).toBeUndefined();
    }
  });

  test('a failed back-channel delivery to a server answering 500 with a body is audited with the status only', async () => {
    const { app, failed } = await logoutFailingAt(server, 'ines', `${stub.url}/backchannel-500`);
    expect(failed).toMatchObject({ error: 'HTTP 500', attempts: 3 });
    const all = await server.sql('audit_events').where({ client_id: app.clientId });
    expect(JSON.stringify(all)).not.toContain(SECRET_TEXT);
    expect(server.logs.join('\n')).not.toContain(SECRET_TEXT);
  });

  test('client roles: an unknown role is refused naming it and the known ones; introspect and admin are accepted', async () => {
    const made = await graphqlPost(server, admin, REGISTER, {
      i: { name: 'Orders API', redirectUris: [], grantTypes: ['CLIENT_CREDENTIALS'], roles: ['introspection'] },
    });
    expect(made.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'roles' });
    expect(made.errors![0]!.message).toMatch(/"introspection" is not a client role.*admin.*introspect/);

    const good = await graphqlPost(server, admin, REGISTER, {
      i: { name: 'Orders API', redirectUris: [], grantTypes: ['CLIENT_CREDENTIALS'], roles: ['introspect'] },
    });
    expect(good.errors).toBeUndefined();
    const clientId = (good.data!.registerClient as { client: { clientId: string } }).client.clientId;
    const changed = await graphqlPost(server, admin, UPDATE, { c: clientId, i: { roles: ['introspect', 'superuser'] } });
    expect(changed.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'roles' });
    expect(changed.errors![0]!.message).toContain('"superuser"');
    expect((await server.ctx.clients.find(clientId))!.roles).toEqual(['introspect']);
    const both = await graphqlPost(server, admin, UPDATE, { c: clientId, i: { roles: ['admin', 'introspect'] } });
    expect(both.data!.updateClient).toEqual({ clientId, roles: ['admin', 'introspect'] });
  });

  test("an upstream's metadata larger than 64 KiB is refused, not read", async () => {
    const config = loadConfig(
      { LATCHKEY_CONFIG: undefined },
      { identity: { upstreams: [{ id: 'big', name: 'Big', issuer: stub.url, clientId: 'c', clientSecret: 's' }] } },
    );
    const upstreams = loadUpstreams(config.identity.upstreams, 'https://sso.example', pino({ level: 'silent' }));
    await expect(upstreams.find('big')!.strategy()).rejects.toMatchObject({ reason: expect.stringMatching(/answer larger than 64 KiB/) });
  });

  test('an upstream issuer at a link-local or unspecified address stops the start', () => {
    for (const issuer of ['http://169.254.169.254/', 'http://0.0.0.0:9000/']) {
      const config = loadConfig(
        { LATCHKEY_CONFIG: undefined },
        { identity: { upstreams: [{ id: 'meta', name: 'Meta', issuer, clientId: 'c', clientSecret: 's' }] } },
      );
      expect(() => loadUpstreams(config.identity.upstreams, 'https://sso.example', pino({ level: 'silent' }))).toThrow(
        /issuer.*(link-local|unspecified)/,
      );
    }
  });
});

describe('outbound.denyNetworks (docs/decisions.md)', () => {
  let server: TestServer;
  let receiver: Receiver;
  let stub: Stub;
  let key: Awaited<ReturnType<typeof keyPair>>;

  beforeAll(async () => {
    key = await keyPair();
    [server, receiver, stub] = await Promise.all([
      startTestServer('sqlite', { ...FAST, outbound: { denyNetworks: ['127.0.0.0/8', 'fd00::/8'] } }),
      Receiver.start(),
      startStub(key.jwk),
    ]);
  });
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    await stub?.close();
  });

  test('is checked at start: a malformed network is refused, naming the key', () => {
    expect(() => loadConfig({ LATCHKEY_CONFIG: undefined }, { outbound: { denyNetworks: ['10.0.0.0/33'] } })).toThrow(
      /outbound\.denyNetworks/,
    );
    expect(() => loadConfig({ LATCHKEY_CONFIG: undefined }, { outbound: { denyNetworks: ['intranet'] } })).toThrow(
      /outbound\.denyNetworks/,
    );
  });

  test('an address in a denied network is refused at registration', async () => {
    await expect(server.client({ backchannelLogoutUri: receiver.uri })).rejects.toThrow(
      /backchannelLogoutUri: .*in outbound\.denyNetworks/,
    );
    await expect(
      server.client({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwksUri: `${stub.url}/jwks`,
      }),
    ).rejects.toThrow(/jwksUri: .*in outbound\.denyNetworks/);
  });

  test('a host name resolving into a denied network fails the back-channel delivery at connect time, audited with a fixed reason', async () => {
    // `localhost` passes registration (no address in the URL) and resolves to 127.0.0.1 when called.
    const { failed } = await logoutFailingAt(server, 'jon', `http://localhost:${receiver.port}/backchannel-logout`);
    expect(failed).toMatchObject({ error: 'refused address' });
    expect(receiver.hits).toBe(0);
  });

  test('and a jwksUri by host name into a denied network is never fetched', async () => {
    const app = await server.client({
      grantTypes: ['client_credentials'],
      redirectUris: [],
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksUri: `http://localhost:${new URL(stub.url).port}/jwks`,
    });
    const now = Math.floor(Date.now() / 1000);
    const signed = await new SignJWT({
      iss: app.clientId,
      sub: app.clientId,
      aud: `${server.url}/oauth/v20/token`,
      jti: randomUUID(),
      iat: now,
      exp: now + 60,
    })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid })
      .sign(key.privateKey);
    const res = await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'client_credentials',
      client_assertion_type: JWT_BEARER,
      client_assertion: signed,
    });
    expect(res.status).toBe(401);
    expect(stub.hits.get('/jwks')).toBeUndefined();
  });
});
