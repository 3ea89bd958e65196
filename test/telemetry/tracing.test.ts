import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { people } from '../fixtures/ldap/directory.ts';
import { tokenRequest } from '../helpers/admin-api.ts';
import { freshDatabase } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { postForm } from '../helpers/http.ts';
import { spawnLatchkey, type LatchkeyProcess } from '../helpers/latchkey-process.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { spansBelow, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { Hops, locationOf, signInAtUpstream } from '../upstream/hops.ts';

/**
 * docs/tracing.md against a real OTLP receiver: Latchkey started as `npm start` starts it, with the
 * standard OTEL_* variables, exporting real spans (protobuf, decoded here from the wire). A token
 * request is a server span with database and hashing children; a caller's traceparent is continued;
 * an LDAP sign-in, an upstream's callback and a client's JWKS fetch show as spans, the fetch sending
 * traceparent on; no attribute carries a secret; log lines carry trace_id. And without the
 * variables, no OpenTelemetry module is loaded at all.
 */

const SPAN_SERVER = 2;
const SPAN_CLIENT = 3;
/** startTestServer's secret: the traced process shares its database, so its client secrets too. */
const SECRET = 'test-secret-test-secret-test-secret-0123';
const DANA_PASSWORD = 'dana-local-password-31';
const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const probe = fileURLToPath(new URL('./module-log.mjs', import.meta.url));

/** A caller's W3C trace context: a trace id and the id of its own span. */
const traceparent = () => {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
};

/** The lines a module-log.mjs file holds once its process has exited. */
async function moduleLog(file: string): Promise<string[]> {
  await eventually('the process wrote its module log at exit', async () => readFileSync(file, 'utf8').includes('exit\n'));
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

describe('OpenTelemetry traces', () => {
  let receiver: OtlpReceiver;
  let slapd: Slapd;
  let upstream: OidcUpstream;
  let server: TestServer;
  let latchkey: LatchkeyProcess;
  let home: string;
  let dir: string;
  let jwksHost: Server;
  let app: { clientId: string; clientSecret: string | null; redirectUri: string };
  let jwtApp: { clientId: string };
  let key: { privateKey: CryptoKey; jwk: JWK };
  /** The trace headers the client's JWKS endpoint received. */
  const jwksCalls: Array<{ traceparent?: string; baggage?: string }> = [];
  /** A trace its caller did not sample: nothing of it may be exported. */
  const unsampled = traceparent();
  /** Every secret the tests used or were given: none may appear in any exported span. */
  const secrets: string[] = [DANA_PASSWORD, people.alice.password, ADMIN_PASSWORD, SECRET];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-tracing-'));
    receiver = await startOtlpReceiver();
    slapd = await startSlapd();
    const port = await freePort();
    home = `http://127.0.0.1:${port}`;
    upstream = await startOidcUpstream([`${home}/login/upstream/partner/callback`]);
    upstream.accounts.set('u-ann', { sub: 'u-ann', preferred_username: 'ann', email: 'ann@example.com', email_verified: true });
    secrets.push(upstream.clientSecret);

    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    key = { privateKey, jwk: { ...(await exportJWK(publicKey)), kid: 'tracing-key', alg: 'ES256', use: 'sig' } };
    const jwksPort = await freePort();
    jwksHost = createServer((req, res) => {
      jwksCalls.push({ traceparent: req.headers.traceparent as string | undefined, baggage: req.headers.baggage as string | undefined });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.jwk] }));
    });
    await new Promise<void>((resolve) => jwksHost.listen(jwksPort, '127.0.0.1', resolve));

    // The clients and the local user are made through the services of an in-process server on the same database.
    const identity = ldapChain(ldapBackendConfig(slapd));
    server = await startTestServer('sqlite', identity);
    app = await server.client({ grantTypes: ['authorization_code', 'password', 'refresh_token'], scopes: ['openid', 'profile'] });
    secrets.push(app.clientSecret!);
    jwtApp = await server.client({
      grantTypes: ['client_credentials'],
      redirectUris: [],
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksUri: `http://127.0.0.1:${jwksPort}/jwks`,
    });
    await server.user('dana', DANA_PASSWORD);

    const config = join(dir, 'latchkey.yaml');
    writeFileSync(
      config,
      JSON.stringify({
        identity: {
          ...identity.identity,
          upstreams: [
            {
              id: 'partner',
              name: 'Partner IdP',
              issuer: upstream.issuer,
              clientId: upstream.clientId,
              clientSecret: upstream.clientSecret,
            },
          ],
        },
      }),
    );
    latchkey = await spawnLatchkey({
      DATABASE_URL: server.db.url,
      LATCHKEY_SECRET: SECRET,
      PORT: String(port),
      PUBLIC_URL: home,
      LATCHKEY_CONFIG: config,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      // Sent every 100 ms rather than every 5 s, so the tests wait less.
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'latchkey-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
      NODE_OPTIONS: `--import ${probe}`,
      MODULE_LOG: join(dir, 'traced-modules.txt'),
    });
  }, 180_000);

  afterAll(async () => {
    await latchkey?.stop();
    await server?.stop();
    await upstream?.stop();
    await slapd?.destroy();
    jwksHost?.closeAllConnections();
    await new Promise((resolve) => jwksHost?.close(resolve));
    await receiver?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const authorizeUrl = () =>
    `${home}/oauth/v20/authorize?${new URLSearchParams({ client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', scope: 'openid', state: 'st' })}`;
  const inTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
  const below = (root: ReceivedSpan) => spansBelow(receiver.spans, root);
  /** The server span named `name` of a trace, once exported. */
  async function serverSpan(name: string, traceId?: string): Promise<ReceivedSpan> {
    let span: ReceivedSpan | undefined;
    await eventually(`a server span ${name}`, async () => {
      span = receiver.spans.find((s) => s.kind === SPAN_SERVER && s.name === name && (!traceId || s.traceId === traceId));
      return span !== undefined;
    });
    return span!;
  }

  test('a token request is a server span, continuing the caller’s traceparent, with database and hashing spans below it', async () => {
    const caller = traceparent();
    const tokens = await tokenRequest(
      { url: home } as TestServer,
      { grant_type: 'password', client_id: app.clientId, client_secret: app.clientSecret!, username: 'dana', password: DANA_PASSWORD },
      { traceparent: caller.header },
    );
    secrets.push(tokens.access_token, tokens.refresh_token!);

    const span = await serverSpan('POST /oauth/v20/token', caller.traceId);
    expect(span.parentSpanId).toBe(caller.parentId);
    expect(span.attributes).toEqual({
      'http.request.method': 'POST',
      'http.route': '/oauth/v20/token',
      'http.response.status_code': 200,
      'url.path': '/oauth/v20/token',
      'url.scheme': 'http',
      'client.address': '127.0.0.1',
      'latchkey.client_id': app.clientId,
    });
    expect(span.resource).toMatchObject({ 'service.name': 'latchkey-under-test', 'deployment.environment.name': 'test' });

    // Sent once the request's writes have committed: wait for the token's insert.
    await eventually('the token insert', async () =>
      below(span).some((s) => String(s.attributes['db.statement']).includes('access_tokens')),
    );
    const children = below(span);
    const db = children.filter((s) => s.attributes['db.system'] === 'sqlite');
    expect(db.length).toBeGreaterThan(2);
    for (const s of db) {
      expect(s.kind).toBe(SPAN_CLIENT);
      expect(s.attributes['db.statement']).toMatch(/\?/);
      expect(s.attributes['db.operation']).toMatch(/^[A-Z ]+$/);
    }
    expect(db.map((s) => s.name)).toEqual(expect.arrayContaining(['SELECT clients', 'SELECT users']));
    // The caller's decision is followed: a request it did not sample is not recorded (checked once all is sent, below).
    await tokenRequest(
      { url: home } as TestServer,
      { grant_type: 'password', client_id: app.clientId, client_secret: app.clientSecret!, username: 'dana', password: DANA_PASSWORD },
      { traceparent: unsampled.header.replace(/-01$/, '-00') },
    ).then((t) => secrets.push(t.access_token, t.refresh_token!));

    const hashing = children.find((s) => s.name === 'password verify');
    expect(hashing?.attributes).toEqual({ 'latchkey.password.algorithm': 'argon2id' });
    // The hashing of the password is in the trace of the request, below its span.
    expect(hashing!.traceId).toBe(caller.traceId);
  });

  test('an LDAP sign-in shows the directory’s search and bind, without a DN, filter or password', async () => {
    // The login page's password form (the page has the upstream's button too).
    const hops = new Hops();
    const authorize = authorizeUrl();
    const page = await hops.get(authorize);
    const signedIn = await hops.submitForm(authorize, await page.text(), /name="username"/, {
      username: 'alice',
      password: people.alice.password,
    });
    expect(signedIn.status).toBe(303);
    const code = new URL(locationOf(signedIn, home)).searchParams.get('code');
    secrets.push(code!);
    const exchanged = (await (await exchangeCode({ url: home } as TestServer, app, code!)).json()) as Record<string, string>;
    expect(exchanged).toMatchObject({ token_type: 'bearer' });
    secrets.push(exchanged.access_token!, exchanged.id_token!);

    let ldap: ReceivedSpan[] = [];
    await eventually('the sign-in’s LDAP spans', async () => {
      const signIns = receiver.spans.filter((s) => s.kind === SPAN_SERVER && s.name === 'POST /oauth/v20/authorize');
      ldap = signIns.flatMap(below).filter((s) => s.name.startsWith('LDAP '));
      return ldap.some((s) => s.name === 'LDAP bind') && ldap.some((s) => s.name === 'LDAP search');
    });
    const [host, port] = new URL(slapd.url).host.split(':');
    for (const s of ldap) {
      expect(s.kind).toBe(SPAN_CLIENT);
      expect(s.attributes).toMatchObject({ 'server.address': host, 'server.port': Number(port), 'network.protocol.name': 'ldap' });
      expect(JSON.stringify(s.attributes)).not.toMatch(/alice|uid=|dc=/i);
    }
    expect(ldap.find((s) => s.name === 'LDAP search' && s.attributes['ldap.search.entries'] === 1)).toBeDefined();
    const signIn = receiver.spans.find((s) => s.spanId === ldap[0]!.parentSpanId || below(s).includes(ldap[0]!));
    expect(signIn?.attributes['latchkey.client_id']).toBe(app.clientId);
  });

  test('an upstream’s callback shows the call to its token endpoint as a client span', async () => {
    const hops = new Hops();
    const start = authorizeUrl();
    const page = await hops.get(start);
    const away = await hops.submitForm(start, await page.text(), /Sign in with Partner IdP/);
    expect(away.status).toBe(303);
    const callback = await signInAtUpstream(hops, locationOf(away, start), 'u-ann', home);
    const back = await hops.get(callback);
    expect(back.status).toBe(303);
    // The callback's query (the upstream's code and state) is never in the span.
    secrets.push(new URL(callback).searchParams.get('code')!);

    const span = await serverSpan('GET /login/upstream/:id/callback');
    expect(span.attributes['url.path']).toBe('/login/upstream/partner/callback');
    let calls: ReceivedSpan[] = [];
    await eventually('the call to the upstream', async () => {
      calls = below(span).filter((s) => s.kind === SPAN_CLIENT && s.attributes['url.full'] === `${upstream.issuer}/token`);
      return calls.length > 0;
    });
    expect(calls[0]!.name).toBe('POST');
    expect(calls[0]!.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 200 });
  });

  test('a client’s JWKS fetch is a client span whose traceparent the JWKS endpoint receives', async () => {
    const caller = traceparent();
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({
      iss: jwtApp.clientId,
      sub: jwtApp.clientId,
      aud: `${home}/oauth/v20/token`,
      jti: randomUUID(),
      iat: now,
      exp: now + 60,
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'tracing-key' })
      .sign(key.privateKey);
    secrets.push(assertion);
    const tokens = await tokenRequest(
      { url: home } as TestServer,
      { grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: assertion },
      // Baggage is not passed on: what a caller puts there is not Latchkey's to forward.
      { traceparent: caller.header, baggage: 'caller.note=not-for-the-jwks-host' },
    );
    secrets.push(tokens.access_token);

    const span = await serverSpan('POST /oauth/v20/token', caller.traceId);
    expect(span.attributes['latchkey.client_id']).toBe(jwtApp.clientId);
    let fetch: ReceivedSpan | undefined;
    await eventually('the JWKS fetch span', async () => {
      fetch = below(span).find((s) => s.kind === SPAN_CLIENT && String(s.attributes['url.full']).endsWith('/jwks'));
      return fetch !== undefined;
    });
    expect(fetch!.name).toBe('GET');
    // The JWKS endpoint was called inside this trace, by this span.
    expect(jwksCalls).toContainEqual({ traceparent: `00-${caller.traceId}-${fetch!.spanId}-01`, baggage: undefined });
  });

  test('a log line written during a request carries its trace_id and span_id', async () => {
    const caller = traceparent();
    const res = await postForm(
      `${home}/oauth/v20/token`,
      { grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: 'not-a-jwt' },
      { traceparent: caller.header },
    );
    expect(res.status).toBe(401);
    const span = await serverSpan('POST /oauth/v20/token', caller.traceId);
    const line = latchkey
      .output()
      .split('\n')
      .find((l) => l.includes('client assertion refused') && l.includes(caller.traceId));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ trace_id: caller.traceId, span_id: span.spanId });
    // Outside any request (start-up), a line has none.
    const listening = latchkey
      .output()
      .split('\n')
      .find((l) => l.includes('latchkey listening'));
    expect(JSON.parse(listening!).trace_id).toBeUndefined();
  });

  test('no span carries a password, a secret, a token or a code, in any attribute or anywhere in what was exported', async () => {
    // The process's last spans are sent as it stops; its module log then shows the SDK it loaded.
    await latchkey.stop();
    const values = receiver.spans.flatMap((s) => [s.name, ...Object.values(s.attributes), ...Object.values(s.resource), ...s.otherValues]);
    expect(values.length).toBeGreaterThan(100);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      for (const value of values) expect(String(value)).not.toContain(secret);
      for (const { body } of receiver.exports) expect(body.includes(secret)).toBe(false);
    }
    // No query string anywhere: a path is a path.
    for (const s of receiver.spans) for (const key of ['url.path', 'url.full']) expect(String(s.attributes[key] ?? '')).not.toContain('?');
    expect(inTrace(unsampled.traceId)).toEqual([]);
    // The receiver decoded what the SDK exported by default: protobuf.
    expect(receiver.exports.every((e) => e.contentType === 'application/x-protobuf')).toBe(true);

    const modules = await moduleLog(join(dir, 'traced-modules.txt'));
    expect(modules.some((l) => l.startsWith('import ') && l.includes('/@opentelemetry/sdk-trace-node/'))).toBe(true);
  });
});

describe('tracing off', () => {
  test('without the OTEL_* variables no tracing code is loaded: only the no-op API prom-client requires', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-untraced-'));
    const db = await freshDatabase('sqlite');
    try {
      const log = join(dir, 'modules.txt');
      const latchkey = await spawnLatchkey({
        DATABASE_URL: db.url,
        LATCHKEY_SECRET: SECRET,
        NODE_OPTIONS: `--import ${probe}`,
        MODULE_LOG: log,
      });
      try {
        const tokens = await tokenRequest(
          { url: latchkey.url } as TestServer,
          { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: ADMIN_PASSWORD },
          { traceparent: traceparent().header },
        );
        expect(tokens.access_token).toBeTruthy();
        expect(latchkey.output()).not.toContain('trace_id');
      } finally {
        await latchkey.stop();
      }
      const modules = (await moduleLog(log)).filter((l) => l !== 'exit');
      // prom-client requires @opentelemetry/api (for exemplars) whatever Latchkey does; nothing else, and nothing imported.
      expect(modules.filter((l) => !l.startsWith('require ') || !l.includes('/node_modules/@opentelemetry/api/'))).toEqual([]);
    } finally {
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A small Node process that starts tracing itself and runs `script` (ESM, TypeScript through tsx) from the repository. */
const nodeScript = (script: string, env: Record<string, string>) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH!, ...env },
  });

describe('the variables, and the database spans on PostgreSQL', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.stop());

  test('OTEL_SDK_DISABLED=true keeps it off; OTEL_EXPORTER_OTLP_PROTOCOL=http/json exports JSON', async () => {
    const script = `
      import { startTracing, outboundSpan, stopTracing } from './src/telemetry/trace.ts';
      const status = await startTracing();
      await outboundSpan('probe', { 'probe.protocol': process.env.OTEL_EXPORTER_OTLP_PROTOCOL }, async () => undefined);
      await stopTracing();
      process.stdout.write(String(status.on));`;
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
    expect((await nodeScript(script, { ...env, OTEL_SDK_DISABLED: 'true' })).stdout).toBe('false');
    expect((await nodeScript(script, env)).stdout).toBe('true');
    expect(receiver.exports.map((e) => e.contentType)).toEqual(['application/json']);
    expect(receiver.spans).toMatchObject([{ name: 'probe', kind: SPAN_CLIENT, attributes: { 'probe.protocol': 'http/json' } }]);
    expect(receiver.spans[0]!.resource['service.name']).toBe('latchkey');
  });

  test('on PostgreSQL: db.system postgresql, the SQL with its placeholders, never a parameter', async () => {
    const db = await freshDatabase('postgres');
    try {
      const script = `
        import { startTracing, outboundSpan, stopTracing } from './src/telemetry/trace.ts';
        import { connect } from './src/db/connect.ts';
        import { statement } from './src/db/statements.ts';
        await startTracing();
        const database = connect(process.env.DATABASE_URL);
        const echo = statement('select ?::text as echoed');
        await outboundSpan('pg probe', {}, async () => {
          await database.fast.get(echo, ['fast-parameter-never-exported']);
          await database.knex.raw('select ? as echoed', ['knex-parameter-never-exported']);
          await database.transaction((trx) => trx.fast.run(echo, ['transaction-parameter-never-exported']));
        });
        await database.knex.destroy();
        await stopTracing();`;
      await nodeScript(script, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, DATABASE_URL: db.url });
      const root = receiver.spans.find((s) => s.name === 'pg probe')!;
      const statements = receiver.spans.filter((s) => s.traceId === root.traceId && s.attributes['db.system'] === 'postgresql');
      // The fast statement, knex's, and the fast statement inside a knex transaction (through knex).
      expect(statements.map((s) => [s.name, s.kind, s.attributes['db.statement']])).toEqual([
        ['SELECT', SPAN_CLIENT, 'select $1::text as echoed'],
        ['SELECT', SPAN_CLIENT, 'select $1 as echoed'],
        ['SELECT', SPAN_CLIENT, 'select $1::text as echoed'],
      ]);
      for (const { body } of receiver.exports) expect(body.includes('never-exported')).toBe(false);
    } finally {
      await db.drop();
    }
  });
});
