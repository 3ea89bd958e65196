import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { advanceClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, CookieJar, get, hiddenFields, postForm } from '../helpers/http.ts';
import { codeAt } from '../helpers/totp.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The account page's forms (docs/multi-factor-sign-in.md): each asks again before a change, and each is CSRF-protected. */
describe.each(databaseKinds)('the account page on %s', (kind) => {
  let server: TestServer;
  let client: { clientId: string; clientSecret: string | null };

  /** A signed-in browser: its jar and a way to post one of the page's forms by its `_action`. */
  async function signedIn(username: string, password: string) {
    const jar = new CookieJar();
    const login = await get(`${server.url}/account`, {}, { cookie: jar.header() });
    jar.store(login);
    const res = await postForm(
      `${server.url}/account`,
      { ...hiddenFields(await login.text()), username, password },
      { cookie: jar.header() },
    );
    jar.store(res);
    expect(res.status).toBe(303);
    const page = async () => {
      const r = await get(`${server.url}/account`, {}, { cookie: jar.header() });
      jar.store(r);
      return r.text();
    };
    const post = async (action: string, fields: Record<string, string>, path = '/account') => {
      const html = await (path === '/account'
        ? page()
        : get(`${server.url}${path}`, {}, { cookie: jar.header() }).then((r) => {
            jar.store(r);
            return r.text();
          }));
      const csrf = hiddenFields(html).csrf_token!;
      const r = await postForm(`${server.url}${path}`, { _action: action, csrf_token: csrf, ...fields }, { cookie: jar.header() });
      jar.store(r);
      return { status: r.status, html: await r.text() };
    };
    return { jar, page, post };
  }

  beforeAll(async () => {
    server = await startTestServer(kind);
    client = await server.client({ grantTypes: ['password', 'refresh_token'], scopes: ['openid'] });
  });
  afterAll(() => server.stop());

  test('turning the authenticator off asks for the password or a code again', async () => {
    await server.user('dana', 'dana-password-1');
    const b = await signedIn('dana', 'dana-password-1');
    const enrol = await b.post('enrol', {}, '/account/mfa/totp'); // no code: the page again, with the key
    const secret = /id="totp-secret"[^>]*>([A-Z2-7]+)</.exec(enrol.html)![1]!;
    expect((await b.post('enrol', { code: codeAt(secret, serverNow()) }, '/account/mfa/totp')).status).toBe(200);

    const refused = await b.post('remove_totp', { password: 'not-her-password' });
    expect(refused.status).toBe(401);
    expect(await b.page()).toContain('Turn off the authenticator app');
    advanceClock(30_000);
    const removed = await b.post('remove_totp', { code: codeAt(secret, serverNow()) });
    expect(removed.status).toBe(200);
    expect(removed.html).toContain('Set up an authenticator app');
  });

  test('a form without its CSRF token changes nothing', async () => {
    await server.user('erin', 'erin-password-1');
    const b = await signedIn('erin', 'erin-password-1');
    const forged = await postForm(`${server.url}/account`, { _action: 'sign_out_everywhere' }, { cookie: b.jar.header() });
    expect(forged.status).toBe(403);
    expect(await b.page()).toContain('Signed in as');
  });

  test('change the password: the old one stops working', async () => {
    await server.user('fay', 'fay-password-1');
    const b = await signedIn('fay', 'fay-password-1');
    expect((await b.post('password', { password: 'wrong-password', new_password: 'fay-password-2' })).status).toBe(401);
    expect((await b.post('password', { password: 'fay-password-1', new_password: 'short' })).status).toBe(400);
    expect((await b.post('password', { password: 'fay-password-1', new_password: 'fay-password-2' })).status).toBe(200);
    const grant = (password: string) =>
      postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: 'fay', password },
        { authorization: basic(client.clientId, client.clientSecret!) },
      );
    expect((await grant('fay-password-1')).status).toBe(400);
    expect((await grant('fay-password-2')).status).toBe(200);
  });

  test('sign out everywhere ends every session and revokes the refresh tokens', async () => {
    await server.user('gil', 'gil-password-1');
    const here = await signedIn('gil', 'gil-password-1');
    const elsewhere = await signedIn('gil', 'gil-password-1');
    const tokens = (await (
      await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: 'gil', password: 'gil-password-1' },
        { authorization: basic(client.clientId, client.clientSecret!) },
      )
    ).json()) as { refresh_token: string };

    const out = await here.post('sign_out_everywhere', {});
    expect(out.status).toBe(200);
    expect(out.html).toContain('signed out');
    expect(await elsewhere.page()).toContain('name="password"'); // the login form: that session is gone too
    const refresh = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      { authorization: basic(client.clientId, client.clientSecret!) },
    );
    expect(refresh.status).toBe(400);
  });
});
