import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { basic, get, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../helpers/throwaway-postgres.ts';

/**
 * docs/decisions.md "The database unreachable": while the database is down, JSON endpoints answer 503
 * `temporarily_unavailable`, pages answer an HTML error page with 503, the log holds one line per outage
 * rather than a stack trace per request, and /readyz is 503. When the database is back, the same
 * server answers again: no restart. The database is a PostgreSQL server of the test's own, really
 * stopped and started under the running Latchkey.
 */

const looksLikeStackTrace = /"stack"|stacktrace|\n\s+at [\w.<]+ \(|node_modules\//;

describe('the database stops under a running Latchkey, then comes back', () => {
  let pgsql: ThrowawayPostgres;
  let server: TestServer;
  let app: { clientId: string; clientSecret: string | null; redirectUri: string };
  let userToken: string;
  let adminToken: string;

  beforeAll(async () => {
    pgsql = await startThrowawayPostgres();
    // The periodic key check is pushed out of the way, so the log shows what requests cause.
    server = await startTestServer('postgres', { databaseUrl: pgsql.url, keys: { reloadInterval: 3600 } });
    await server.user('olivia', 'olivia-password-1', { email: 'olivia@example.org' });
    app = await server.client({
      grantTypes: ['authorization_code', 'password', 'refresh_token', 'client_credentials'],
      scopes: ['openid', 'profile', 'email', 'api:read'],
    });
    const user = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username: 'olivia', password: 'olivia-password-1', scope: 'openid profile email' },
      auth(),
    );
    userToken = ((await user.json()) as { access_token: string }).access_token;
    const admin = await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'password',
      client_id: 'admin-cli',
      username: 'admin',
      password: ADMIN_PASSWORD,
    });
    adminToken = ((await admin.json()) as { access_token: string }).access_token;
  });
  afterAll(async () => {
    await server?.stop();
    await pgsql?.destroy();
  });

  const auth = () => ({ authorization: basic(app.clientId, app.clientSecret!) });

  /** The JSON endpoints of docs/endpoints.md, as a client and a resource server call them. */
  const jsonEndpoints: Record<string, () => Promise<Response>> = {
    'token (password grant)': () =>
      postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: 'olivia', password: 'olivia-password-1', scope: 'openid' },
        auth(),
      ),
    'token (client_credentials grant)': () =>
      postForm(`${server.url}/oauth/v20/token`, { grant_type: 'client_credentials', scope: 'api:read' }, auth()),
    '/api/oauth/v20/me': () => get(`${server.url}/api/oauth/v20/me`, {}, { authorization: `Bearer ${userToken}` }),
    '/connect/v10/userinfo': () => get(`${server.url}/connect/v10/userinfo`, {}, { authorization: `Bearer ${userToken}` }),
  };
  const authorizePage = () =>
    get(`${server.url}/oauth/v20/authorize`, {
      client_id: app.clientId,
      redirect_uri: app.redirectUri,
      response_type: 'code',
      scope: 'openid',
      state: 's-1',
    });
  const graphql = () =>
    fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ query: '{ clients(first: 1) { totalCount } }' }),
    });
  const readyz = () => get(`${server.url}/readyz`);

  async function everythingAnswers(): Promise<void> {
    for (const [name, call] of Object.entries(jsonEndpoints)) {
      const res = await call();
      expect({ name, status: res.status }).toEqual({ name, status: 200 });
    }
    const page = await authorizePage();
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const gql = await graphql();
    expect(gql.status).toBe(200);
    expect(await gql.json()).toEqual({ data: { clients: { totalCount: expect.any(Number) } } });
    const ready = await readyz();
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ database: 'up' });
  }

  describe('PostgreSQL stopped (and, at the end, started again)', () => {
    let logsBefore = 0;
    /** What the server's libraries print around the structured log (knex does, by default): an operator reads that too. */
    const consoleLines: string[] = [];
    const spies: Array<{ mockRestore(): void }> = [];

    beforeAll(async () => {
      // Precondition: with the database up, every endpoint answers.
      await everythingAnswers();
      for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
        spies.push(
          jest
            .spyOn(console, method)
            .mockImplementation(
              (...args: unknown[]) => void consoleLines.push(args.map((a) => (a instanceof Error ? a.stack : String(a))).join(' ')),
            ),
        );
      }
      logsBefore = server.logs.length;
      await pgsql.stop('fast');
    });
    afterAll(() => {
      for (const s of spies) s.mockRestore();
    });

    test('the token endpoint (password and client_credentials grants), /me and userinfo answer 503 temporarily_unavailable in JSON, never 500', async () => {
      for (const [name, call] of Object.entries(jsonEndpoints)) {
        const res = await call();
        const text = await res.text();
        expect({ name, status: res.status, contentType: res.headers.get('content-type') }).toEqual({
          name,
          status: 503,
          contentType: expect.stringMatching(/application\/json/),
        });
        expect({ name, error: (JSON.parse(text) as { error?: string }).error }).toEqual({ name, error: 'temporarily_unavailable' });
        expect(text).not.toMatch(looksLikeStackTrace);
      }
    });

    test('the authorize endpoint answers 503 with an HTML error page', async () => {
      const res = await authorizePage();
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      const html = await res.text();
      expect(html).toMatch(/<html/i);
      expect(html).not.toMatch(looksLikeStackTrace);
    });

    test('/graphql answers 503 in the GraphQL error shape, not INTERNAL_SERVER_ERROR', async () => {
      const res = await graphql();
      expect(res.status).toBe(503);
      const text = await res.text();
      expect(text).not.toMatch(looksLikeStackTrace);
      const body = JSON.parse(text) as { data?: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> };
      expect(Array.isArray(body.errors)).toBe(true);
      expect(body.errors!.length).toBeGreaterThan(0);
      for (const e of body.errors!) {
        expect(typeof e.message).toBe('string');
        expect(e.extensions?.code).not.toBe('INTERNAL_SERVER_ERROR');
      }
    });

    test('the outage as operations see it: 30 requests all 503 and /readyz 503, a line or two in the log and no stack trace; then the database returns and the same server answers again within seconds', async () => {
      const calls = Object.entries({ ...jsonEndpoints, authorize: authorizePage, '/graphql': graphql, '/readyz': readyz });
      const not503: string[] = [];
      for (let i = 0; i < 30; i++) {
        const [name, call] = calls[i % calls.length]!;
        const res = await call();
        await res.arrayBuffer();
        if (res.status !== 503) not503.push(`request ${i + 1}, ${name}: ${res.status}`);
      }
      expect(not503).toEqual([]);
      const ready = await readyz();
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ database: 'down' });

      // One line per outage, not one per request: about 35 requests so far, every one refused.
      const lines = server.logs.slice(logsBefore);
      expect(lines.filter((l) => l.includes('"stack"'))).toEqual([]);
      expect(lines.length).toBeGreaterThanOrEqual(1);
      expect(lines.length).toBeLessThanOrEqual(2);
      expect(lines.join('\n')).toMatch(/database/i);
      // Nothing printed around the structured log either (a plain line per request, a stack trace).
      expect(consoleLines).toEqual([]);

      // The database comes back: no restart of Latchkey, the old access token works again.
      await pgsql.start();
      const deadline = Date.now() + 10_000;
      let status = 0;
      while (Date.now() < deadline) {
        status = (await jsonEndpoints['/api/oauth/v20/me']!()).status;
        if (status === 200) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(status).toBe(200);
      await everythingAnswers();
    });
  });
});
