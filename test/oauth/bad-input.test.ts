import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { databaseKinds } from '../helpers/databases.ts';
import { get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** Missing, repeated, oversized and malformed input: an OAuth error in the endpoint's shape, never a 500. */
describe.each(databaseKinds)('bad input on %s', (kind) => {
  let server: TestServer;
  let app: { clientId: string; clientSecret: string | null; redirectUri: string };

  beforeAll(async () => {
    server = await startTestServer(kind);
    app = await server.client({ grantTypes: ['authorization_code', 'password', 'refresh_token'] });
  });
  afterAll(() => server.stop());

  const raw = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(server.url + path, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
    });

  test('a repeated parameter at the token endpoint is invalid_request', async () => {
    const body = `grant_type=password&grant_type=password&client_id=${app.clientId}&client_secret=${app.clientSecret}`;
    const res = await raw('/oauth/v20/token', body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    const split = await fetch(`${server.url}/oauth/v20/token?client_id=${app.clientId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `client_id=${app.clientId}&grant_type=password`,
    });
    expect(((await split.json()) as { error: string }).error).toBe('invalid_request');
  });

  test('a repeated parameter at authorize: error page before the client is known, redirect after', async () => {
    const page = await fetch(`${server.url}/oauth/v20/authorize?client_id=a&client_id=b`, { redirect: 'manual' });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('invalid_request');
  });

  test('a body above 64 KiB is refused with 413', async () => {
    const res = await raw('/oauth/v20/token', `grant_type=password&username=${'a'.repeat(70 * 1024)}`);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    const me = await raw('/api/oauth/v20/me', `access_token=${'a'.repeat(70 * 1024)}`);
    expect(me.status).toBe(413);
  });

  test('malformed bodies, encodings and Basic credentials are OAuth errors', async () => {
    const badPercent = await raw('/oauth/v20/token', 'grant_type=%E0%A4%A&client_id=%ZZ');
    expect(badPercent.status).toBeLessThan(500);
    const badCharset = await raw('/oauth/v20/token', 'grant_type=password', {
      'content-type': 'application/x-www-form-urlencoded; charset=klingon',
    });
    expect(badCharset.status).toBe(415);
    expect(await badCharset.json()).toMatchObject({ error: 'invalid_request' });
    const badBasic = await postForm(`${server.url}/oauth/v20/token`, { grant_type: 'password' }, { authorization: 'Basic !!!notbase64' });
    expect(badBasic.status).toBe(401);
    expect(await badBasic.json()).toMatchObject({ error: 'invalid_client' });
    const both = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', client_secret: 'x' },
      { authorization: `Basic ${Buffer.from(`${app.clientId}:x`).toString('base64')}` },
    );
    expect(await both.json()).toMatchObject({ error: 'invalid_request' });
  });

  test('a JSON body is not read as parameters: the request is missing its client', async () => {
    const res = await fetch(`${server.url}/oauth/v20/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: app.clientId }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'empty_client_id' });
  });

  test('a token given twice at me is invalid_request; bad PKCE and prompt values are refused by redirect', async () => {
    const me = await get(`${server.url}/api/oauth/v20/me`, { access_token: 'a', token: 'b' });
    expect(me.status).toBe(400);
    expect(await me.json()).toMatchObject({ error: 'invalid_request' });
    const base = { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', state: 's' };
    for (const extra of [
      { code_challenge: 'short' },
      { code_challenge: 'a'.repeat(43), code_challenge_method: 'S512' },
      { prompt: 'sometimes' },
      { prompt: 'none login' },
      { max_age: 'soon' },
    ]) {
      const res = await get(`${server.url}/oauth/v20/authorize`, { ...base, ...extra });
      expect(res.status).toBe(302);
      const q = new URL(res.headers.get('location')!).searchParams;
      expect(q.get('error')).toBe('invalid_request');
      expect(q.get('state')).toBe('s');
    }
  });

  test('nothing is written half: a failed token request leaves no tokens behind', async () => {
    const before = await server.sql('access_tokens').count({ n: '*' }).first();
    await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'password',
      username: 'ghost',
      password: 'x',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    const after = await server.sql('access_tokens').count({ n: '*' }).first();
    expect(Number(after!.n)).toBe(Number(before!.n));
  });

  test('unknown paths and methods answer 404 JSON, not an HTML stack trace', async () => {
    const res = await fetch(`${server.url}/oauth/v20/nothing`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    const put = await fetch(`${server.url}/oauth/v20/token`, { method: 'PUT' });
    expect(put.status).toBe(404);
  });
});
