import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createServer, type Server } from 'node:net';
import { basic, get, postForm } from '../helpers/http.ts';
import { parsePrometheus, sample, scrape, type MetricFamily } from '../helpers/metrics.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { passwordGrant } from '../helpers/throttle.ts';

const TOKEN = 'metrics-token-for-the-tests-0123';

/**
 * `/metrics` (docs/operating-latchkey.md) on a server with two identity backends: the database, and a directory whose
 * address answers nothing (a closed port), so that one backend is up and one down.
 */
describe('GET /metrics', () => {
  let server: TestServer;
  let closedPort: Server;
  let client: { clientId: string; clientSecret: string | null };
  let service: { clientId: string; clientSecret: string | null };
  const scrapeNow = () => scrape(server.url, TOKEN);

  beforeAll(async () => {
    // A port that was free and is bound by nobody that speaks LDAP: connections are refused at once.
    const port = await freePort();
    closedPort = createServer((socket) => socket.destroy()).listen(port, '127.0.0.1');
    server = await startTestServer('sqlite', {
      metrics: { token: TOKEN },
      identity: {
        backends: [
          { id: 'local', plugin: 'database', config: {} },
          {
            id: 'corp',
            plugin: 'ldap',
            config: {
              url: `ldap://127.0.0.1:${port}`,
              bindDN: 'cn=admin,dc=example,dc=org',
              bindPassword: 'x',
              timeoutMs: 500,
              userSearch: { baseDN: 'dc=example,dc=org' },
            },
          },
        ],
      },
    });
    client = await server.client({ grantTypes: ['password'] });
    service = await server.client({ grantTypes: ['client_credentials'] });
    await server.user('alice', 'alice-password-1');
  });
  afterAll(async () => {
    await server?.stop();
    closedPort?.close();
  });

  test('needs the configured bearer token: 401 without it or with another', async () => {
    const without = await get(`${server.url}/metrics`);
    expect(without.status).toBe(401);
    expect(without.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(((await without.json()) as { error: string }).error).toBe('invalid_token');
    const wrong = await get(`${server.url}/metrics`, {}, { authorization: 'Bearer not-the-metrics-token-at-all' });
    expect(wrong.status).toBe(401);
    const right = await get(`${server.url}/metrics`, {}, { authorization: `Bearer ${TOKEN}` });
    expect(right.status).toBe(200);
    expect(right.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(parsePrometheus(await right.text()).length).toBeGreaterThan(10);
  });

  test('has the families of docs/operating-latchkey.md with their types, and the default process and Node.js metrics', async () => {
    await get(`${server.url}/healthz`);
    const families = await scrapeNow();
    const typeOf = (name: string) => families.find((f) => f.name === name)?.type;
    expect(typeOf('latchkey_http_requests_total')).toBe('COUNTER');
    expect(typeOf('latchkey_http_request_duration_seconds')).toBe('HISTOGRAM');
    expect(typeOf('latchkey_tokens_issued_total')).toBe('COUNTER');
    expect(typeOf('latchkey_logins_total')).toBe('COUNTER');
    expect(typeOf('latchkey_identity_backend_up')).toBe('GAUGE');
    expect(typeOf('latchkey_purged_rows_total')).toBe('COUNTER');
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(typeOf(name)).toBeDefined();
    }
    // Every grant, table and backend is there from the start at 0, so rates exist before the first event.
    expect(
      families
        .find((f) => f.name === 'latchkey_tokens_issued_total')!
        .metrics.map((m) => m.labels!.grant)
        .sort(),
    ).toEqual(['authorization_code', 'client_credentials', 'password', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code']);
  });

  test('counts requests under the route pattern, never the raw path or its query', async () => {
    const before = await scrapeNow();
    const secretish = 'a-token-that-must-not-become-a-label';
    await get(`${server.url}/api/oauth/v20/me`, { access_token: secretish });
    await get(`${server.url}/connect/v10/userinfo`, { access_token: secretish });
    await get(`${server.url}/no/such/${secretish}`);
    const after = await scrapeNow();
    const delta = (labels: Record<string, string>) =>
      sample(after, 'latchkey_http_requests_total', labels) - sample(before, 'latchkey_http_requests_total', labels);
    expect(delta({ route: '/api/oauth/v20/me', method: 'GET', status: '401' })).toBe(1);
    expect(delta({ route: '/connect/v10/userinfo', method: 'GET', status: '401' })).toBe(1);
    expect(delta({ route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    const routes = new Set(
      after.filter((f: MetricFamily) => f.name === 'latchkey_http_requests_total').flatMap((f) => f.metrics.map((m) => m.labels!.route)),
    );
    for (const route of routes) expect(route).toMatch(/^(\/[\w./-]*|unmatched)$/);
    // Nowhere in the exposition, histogram series included.
    const text = await (await get(`${server.url}/metrics`, {}, { authorization: `Bearer ${TOKEN}` })).text();
    expect(text).not.toContain(secretish);
    expect(text).toContain('latchkey_http_request_duration_seconds_count{route="/api/oauth/v20/me",method="GET",status="401"}');
  });

  test('counts issued tokens by grant and sign-ins by backend and result', async () => {
    const before = await scrapeNow();
    expect((await passwordGrant(server.url, client, 'alice', 'alice-password-1')).status).toBe(200);
    expect((await passwordGrant(server.url, client, 'alice', 'wrong-password')).status).toBe(400);
    const cc = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'client_credentials' },
      { authorization: basic(service.clientId, service.clientSecret!) },
    );
    expect(cc.status).toBe(200);
    // A name nobody holds, while the directory is down: the directory might have held it.
    expect((await passwordGrant(server.url, client, 'nobody-knows-me', 'whatever-1')).status).toBe(503);
    const after = await scrapeNow();
    const delta = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('latchkey_tokens_issued_total', { grant: 'password' })).toBe(1);
    expect(delta('latchkey_tokens_issued_total', { grant: 'client_credentials' })).toBe(1);
    expect(delta('latchkey_logins_total', { backend: 'local', result: 'success' })).toBe(1);
    expect(delta('latchkey_logins_total', { backend: 'local', result: 'failure' })).toBe(1);
    expect(delta('latchkey_logins_total', { backend: 'corp', result: 'unavailable' })).toBe(1);
  });

  test('counts throttled attempts', async () => {
    const before = await scrapeNow();
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push((await passwordGrant(server.url, client, 'alice', `wrong-${i}`)).status);
    expect(answers.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
    const after = await scrapeNow();
    expect(
      sample(after, 'latchkey_logins_total', { backend: 'none', result: 'throttled' }) -
        sample(before, 'latchkey_logins_total', { backend: 'none', result: 'throttled' }),
    ).toBe(answers.filter((s) => s === 429).length);
  });

  test('shows each identity backend up or down', async () => {
    const families = await scrapeNow();
    expect(sample(families, 'latchkey_identity_backend_up', { backend: 'local' })).toBe(1);
    expect(sample(families, 'latchkey_identity_backend_up', { backend: 'corp' })).toBe(0);
  });
});
