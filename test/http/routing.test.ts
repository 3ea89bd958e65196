import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { get, postForm } from '../helpers/http.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Routes are found by their exact path first and by Express's router second (src/http/exact-routes.ts).
 * Whichever finds it, a request gets the same answer: any spelling Express accepts (case, a trailing
 * slash), HEAD, the 404 of an unknown method, errors in the interface's shape, the request id, and
 * the metrics' route label.
 */
describe('routing by exact path and by the router', () => {
  let server: TestServer;
  let token: string;
  let app: { clientId: string; clientSecret: string | null };

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('carol', 'carol-password-1', { email: 'carol@example.org' });
    app = await server.client({ grantTypes: ['password'] });
    const res = await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'password',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
      username: 'carol',
      password: 'carol-password-1',
      scope: 'openid profile email',
    });
    expect(res.status).toBe(200);
    token = ((await res.json()) as { access_token: string }).access_token;
  });
  afterAll(() => server.stop());

  const me = (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });

  test('another spelling of the path gets the same answer as the exact one', async () => {
    const exact = await me('/api/oauth/v20/me');
    expect(exact.status).toBe(200);
    const body = await exact.json();
    expect(body).toMatchObject({ username: 'carol', email: 'carol@example.org', client_id: app.clientId });
    for (const variant of ['/API/OAuth/v20/ME', '/api/oauth/v20/me/']) {
      const res = await me(variant);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(exact.headers.get('content-type'));
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toEqual(body);
    }
  });

  test('the exact path answers with the headers res.json gave', async () => {
    const res = await me('/connect/v10/userinfo');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const text = await res.text();
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text)).toMatchObject({ sub: expect.any(String), email: 'carol@example.org' });
    expect(res.headers.get('x-request-id')).toMatch(/^[\w.:-]{1,64}$/);
  });

  test('HEAD, which only the router serves, answers like GET without a body', async () => {
    const res = await me('/api/oauth/v20/me', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.text()).toBe('');
  });

  test('a method the path does not serve is a 404 in the interface shape', async () => {
    const res = await fetch(`${server.url}/oauth/v20/token`, { method: 'PUT' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'invalid_request', error_description: 'no such endpoint: PUT /oauth/v20/token' });
  });

  test('an error on an exact path reaches the error handler, with the request id given', async () => {
    const res = await fetch(`${server.url}/api/oauth/v20/me`, {
      headers: { authorization: 'Bearer not-a-token', 'x-request-id': 'routing-test-1' },
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toBe('routing-test-1');
    expect(await res.json()).toMatchObject({ error: 'invalid_access_token' });
    // A form body on the exact path goes through the form parser: a repeated parameter is refused.
    const repeated = await fetch(`${server.url}/oauth/v20/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=password&grant_type=password',
    });
    expect(repeated.status).toBe(400);
    expect(await repeated.json()).toMatchObject({ error: 'invalid_request' });
  });

  test('both ways count under the route pattern, never the spelling', async () => {
    const labels = { route: '/api/oauth/v20/me', method: 'GET', status: '200' };
    const before = sample(await scrape(server.url), 'latchkey_http_requests_total', labels);
    expect((await me('/api/oauth/v20/me')).status).toBe(200);
    expect((await me('/API/OAuth/v20/ME/')).status).toBe(200);
    const after = await scrape(server.url);
    expect(sample(after, 'latchkey_http_requests_total', labels)).toBe(before + 2);
    const routes = new Set(after.find((f) => f.name === 'latchkey_http_requests_total')!.metrics.map((m) => m.labels?.route));
    expect(routes.has('/API/OAuth/v20/ME/')).toBe(false);
  });

  test('query parameters on an exact path are read as before', async () => {
    const res = await get(`${server.url}/api/oauth/v20/me`, { access_token: token });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ username: 'carol' });
  });
});
