import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { advanceClock } from '../helpers/clock.ts';

interface TokenBody {
  access_token: string;
  refresh_token?: string;
  token_type: string;
  expires_in: number;
  remind_in: number;
  scope: string;
  id_token?: string;
  error?: string;
  error_description?: string;
}

describe.each(databaseKinds)('password, refresh and client_credentials grants on %s', (kind) => {
  let server: TestServer;
  let carolId: string;
  let app: { clientId: string; clientSecret: string | null };
  let tokenUrl: string;
  const auth = () => ({ authorization: basic(app.clientId, app.clientSecret!) });

  beforeAll(async () => {
    server = await startTestServer(kind);
    carolId = await server.user('carol', 'carol-password-1', { email: 'carol@example.org' });
    app = await server.client({
      grantTypes: ['password', 'refresh_token', 'client_credentials'],
      scopes: ['openid', 'profile', 'email', 'api:read'],
    });
    tokenUrl = `${server.url}/oauth/v20/token`;
  });
  afterAll(() => server.stop());

  const password = async (username = 'carol', pw = 'carol-password-1', extra: Record<string, string> = {}) =>
    postForm(tokenUrl, { grant_type: 'password', username, password: pw, ...extra }, auth());

  test('password grant through the backend chain; username is case-insensitive', async () => {
    const res = await password('Carol', 'carol-password-1', { scope: 'openid email' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as TokenBody;
    expect(body).toMatchObject({ token_type: 'bearer', scope: 'openid email', expires_in: 3600, remind_in: 3600 });
    expect(body.refresh_token).toBeDefined();
    expect(body.id_token).toBeDefined();
    const me = await get(`${server.url}/api/oauth/v20/me`, {}, { authorization: `Bearer ${body.access_token}` });
    expect(await me.json()).toMatchObject({ userid: carolId, uid: 'carol', email: 'carol@example.org', client_id: app.clientId });
  });

  test('client secret in the body works as well as HTTP Basic', async () => {
    const res = await postForm(tokenUrl, {
      grant_type: 'password',
      username: 'carol',
      password: 'carol-password-1',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    expect(res.status).toBe(200);
  });

  test('refresh rotates; a reused refresh token revokes the whole family', async () => {
    const first = (await (await password()).json()) as TokenBody;
    const second = (await (
      await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token: first.refresh_token! }, auth())
    ).json()) as TokenBody;
    expect(second.access_token).toBeDefined();
    expect(second.refresh_token).not.toBe(first.refresh_token);

    const third = (await (
      await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token: second.refresh_token! }, auth())
    ).json()) as TokenBody;
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: third.access_token })).status).toBe(200);

    // The first token again: reuse. The family dies: the newest access and refresh tokens too.
    const reuse = await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token: first.refresh_token! }, auth());
    expect(reuse.status).toBe(400);
    expect(((await reuse.json()) as TokenBody).error).toBe('invalid_refresh_token');
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: third.access_token })).status).toBe(401);
    const after = await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token: third.refresh_token! }, auth());
    expect(((await after.json()) as TokenBody).error).toBe('invalid_refresh_token');
  });

  test('refresh may narrow the scope but not widen it', async () => {
    const first = (await (await password('carol', 'carol-password-1', { scope: 'openid profile' })).json()) as TokenBody;
    const narrowed = await postForm(
      tokenUrl,
      { grant_type: 'refresh_token', refresh_token: first.refresh_token!, scope: 'profile' },
      auth(),
    );
    const body = (await narrowed.json()) as TokenBody;
    expect(body.scope).toBe('profile');
    const widened = await postForm(
      tokenUrl,
      { grant_type: 'refresh_token', refresh_token: body.refresh_token!, scope: 'profile email' },
      auth(),
    );
    expect(((await widened.json()) as TokenBody).error).toBe('invalid_scope');
  });

  test('a refresh token of another client is refused', async () => {
    const other = await server.client({ grantTypes: ['password', 'refresh_token'] });
    const first = (await (await password()).json()) as TokenBody;
    const res = await postForm(
      tokenUrl,
      { grant_type: 'refresh_token', refresh_token: first.refresh_token! },
      { authorization: basic(other.clientId, other.clientSecret!) },
    );
    expect(((await res.json()) as TokenBody).error).toBe('invalid_refresh_token');
  });

  test('client_credentials: a token for the client, no user, refused at me and userinfo', async () => {
    const res = await postForm(tokenUrl, { grant_type: 'client_credentials', scope: 'api:read' }, auth());
    expect(res.status).toBe(200);
    const body = (await res.json()) as TokenBody;
    expect(body).toMatchObject({ token_type: 'bearer', scope: 'api:read' });
    expect(body.refresh_token).toBeUndefined();
    expect(body.id_token).toBeUndefined();
    for (const path of ['/api/oauth/v20/me', '/connect/v10/userinfo']) {
      const r = await get(server.url + path, { access_token: body.access_token });
      expect(r.status).toBe(401);
      expect(((await r.json()) as TokenBody).error).toBe('invalid_access_token');
    }
  });

  test('a disabled user cannot sign in', async () => {
    const id = await server.user('dave', 'dave-password-1');
    await server.ctx.users.update(id, { disabled: true }, CLI_ACTOR);
    const res = await password('dave', 'dave-password-1');
    expect(res.status).toBe(400);
    expect(((await res.json()) as TokenBody).error).toBe('invalid_grant');
  });

  test('brute force: after 5 failures the user waits, even with the right password; success resets', async () => {
    await server.user('erin', 'erin-password-1');
    for (let i = 0; i < 5; i++) {
      const r = await password('erin', `wrong-${i}`);
      expect(r.status).toBe(400);
    }
    const throttled = await password('erin', 'erin-password-1');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await throttled.json()) as TokenBody;
    expect(body.error).toBe('invalid_grant');
    expect(body.error_description).toMatch(/^too many failed attempts, retry after \d+ s$/);

    advanceClock(1100);
    expect((await password('erin', 'erin-password-1')).status).toBe(200);
    // The count is reset: five more failures before any delay.
    for (let i = 0; i < 4; i++) expect((await password('erin', 'bad')).status).toBe(400);
    expect((await password('erin', 'erin-password-1')).status).toBe(200);
  });

  test('an unknown user and a wrong password get the same answer', async () => {
    const unknown = (await (await password('nobody-here', 'whatever-1')).json()) as TokenBody;
    const wrong = (await (await password('carol', 'whatever-1')).json()) as TokenBody;
    expect(unknown).toEqual(wrong);
  });
});
