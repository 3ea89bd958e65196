import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode, type CodeFlowClient } from '../helpers/flow.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const LOGOUT = '/connect/v10/logout';

/**
 * Where RP-initiated logout sends the browser back to, and what its error page says: the registered
 * `post_logout_redirect_uri` exactly as registered when there is no state to carry (nothing appended,
 * not even a `?`), and an error page that speaks of signing out.
 */
describe.each(databaseKinds)('logout redirect and error page on %s', (kind) => {
  let server: TestServer;
  let app: CodeFlowClient;
  const bye = 'http://localhost:3000/bye';

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('hana', 'hana-password-1');
    app = await server.client({ scopes: ['openid'], postLogoutRedirectUris: [bye] });
  });
  afterAll(() => server?.stop());

  /** A signed-in browser and the id_token of its session. */
  async function signedIn() {
    const browser = new Browser(server);
    const { code } = await obtainCode(browser, app, 'hana', 'hana-password-1', { scope: 'openid' });
    const { id_token } = (await (await exchangeCode(server, app, code!)).json()) as { id_token: string };
    return { browser, idToken: id_token };
  }

  const logout = async (browser: Browser, query: Record<string, string>) => {
    const res = await get(server.url + LOGOUT, query, { cookie: browser.jar.header() });
    browser.jar.store(res);
    return res;
  };

  test.each([
    ['no state', {}],
    ['an empty state', { state: '' }],
  ])('with an id_token_hint and %s, the redirect is the registered URI exactly', async (_, extra) => {
    const { browser, idToken } = await signedIn();
    const res = await logout(browser, { id_token_hint: idToken, post_logout_redirect_uri: bye, ...extra });
    expect([res.status, res.headers.get('location')]).toEqual([302, bye]);
  });

  test('after the confirmation form, without state, the redirect is the registered URI exactly; with one, it carries it', async () => {
    for (const [extra, location] of [
      [{}, bye],
      [{ state: 'bye-1' }, `${bye}?state=bye-1`],
    ] as const) {
      const { browser } = await signedIn();
      const page = await logout(browser, { client_id: app.clientId, post_logout_redirect_uri: bye, ...extra });
      const form = htmlForms(await page.text()).find((f) => f.method === 'post')!;
      const done = await postForm(server.url + LOGOUT, form.fields, { cookie: browser.jar.header() });
      expect([done.status, done.headers.get('location')]).toEqual([303, location]);
    }
  });

  test('a refused logout request shows an error page about signing out, not about signing in', async () => {
    const res = await get(server.url + LOGOUT, { client_id: app.clientId, post_logout_redirect_uri: 'https://elsewhere.example/' });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain('<h1>This sign-out request cannot be completed</h1>');
    expect(html).toContain('post_logout_redirect_uri is not registered for this client');
    expect(html).not.toContain('sign-in');
  });
});
