import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode, type CodeFlowClient } from '../helpers/flow.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { get, locationQuery, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const LOGOUT = '/connect/v10/logout';

/**
 * docs/decisions.md: RP-initiated logout without an `id_token_hint` asks first (a CSRF-protected form), so a
 * page that merely links to the logout URL cannot end anyone's session; with a valid hint it ends at
 * once. Every authorization response carries `iss` (RFC 9207), announced in discovery.
 */
describe.each(databaseKinds)('logout confirmation and iss on %s', (kind) => {
  let server: TestServer;
  let app: CodeFlowClient;
  const bye = 'http://localhost:3000/bye';

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('grace', 'grace-password-1', { email: 'grace@example.org' });
    app = await server.client({ scopes: ['openid', 'profile', 'email'], postLogoutRedirectUris: [bye] });
  });
  afterAll(() => server.stop());

  const authorizeQuery = (extra: Record<string, string> = {}) => ({
    client_id: app.clientId,
    redirect_uri: app.redirectUri,
    response_type: 'code',
    state: 'st',
    ...extra,
  });

  /** A browser signed in to `app`, with the tokens (scope openid) of that session. */
  async function signedInBrowser() {
    const browser = new Browser(server);
    const q = await obtainCode(browser, app, 'grace', 'grace-password-1', { scope: 'openid profile' });
    const res = await exchangeCode(server, app, q.code!);
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as { access_token: string; id_token: string };
    expect(tokens.id_token).toBeDefined();
    return { browser, tokens };
  }

  /** Whether the browser still has its SSO session: prompt=none answers a code, or login_required. */
  async function sessionAlive(browser: Browser): Promise<boolean> {
    const res = await browser.authorize(authorizeQuery({ prompt: 'none' }));
    expect(res.status).toBe(302);
    const q = locationQuery(res);
    if (q.code) return true;
    expect(q.error).toBe('login_required');
    return false;
  }

  const tokenWorks = async (accessToken: string) =>
    (await get(`${server.url}/api/oauth/v20/me`, { access_token: accessToken })).status === 200;

  /** GET the logout URL the way a browser following a link would, cookies and all. */
  async function logoutLink(browser: Browser, query: Record<string, string> = {}): Promise<Response> {
    const res = await get(server.url + LOGOUT, query, { cookie: browser.jar.header() });
    browser.jar.store(res);
    return res;
  }

  describe('RP-initiated logout', () => {
    test('a plain GET without id_token_hint shows a confirmation page with a CSRF-protected POST form and does not end the session', async () => {
      const { browser, tokens } = await signedInBrowser();
      const page = await logoutLink(browser);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/text\/html/);
      expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      // The session cookie is not cleared by merely showing the question.
      expect(page.headers.getSetCookie().some((c) => /^lk_sso=;|^lk_sso=[^;]*;.*(Expires=Thu, 01 Jan 1970|Max-Age=0)/i.test(c))).toBe(
        false,
      );
      const forms = htmlForms(await page.text()).filter((f) => f.method === 'post');
      expect(forms).toHaveLength(1);
      expect(forms[0]!.fields.csrf_token).toMatch(/^.{20,}$/);

      expect(await sessionAlive(browser)).toBe(true);
      expect(await tokenWorks(tokens.access_token)).toBe(true);
    });

    test('submitting the confirmation form ends the session and revokes its tokens', async () => {
      const { browser, tokens } = await signedInBrowser();
      const page = await logoutLink(browser);
      expect(page.status).toBe(200);
      const form = htmlForms(await page.text()).find((f) => f.method === 'post');
      expect(form).toBeDefined();
      const target = new URL(form!.action || LOGOUT, server.url + LOGOUT).toString();
      const done = await postForm(target, form!.fields, { cookie: browser.jar.header() });
      browser.jar.store(done);
      expect(done.status).toBeLessThan(400);

      expect(await sessionAlive(browser)).toBe(false);
      expect(await tokenWorks(tokens.access_token)).toBe(false);
    });

    test('a cross-site POST without the right csrf_token does not end the session', async () => {
      const { browser, tokens } = await signedInBrowser();
      // Worst case: the browser sends the SSO cookie along with the forged POST.
      for (const fields of [{}, { csrf_token: 'forged-token-forged-token-forged-token' }, { csrf_token: '' }]) {
        const res = await postForm(server.url + LOGOUT, fields, { cookie: browser.jar.header() });
        expect(res.status).toBeLessThan(500);
        expect(await sessionAlive(browser)).toBe(true);
      }
      // A csrf_token issued to another browser (the attacker's own) does not help either.
      const attacker = (await signedInBrowser()).browser;
      const attackerPage = await logoutLink(attacker);
      const attackerToken = htmlForms(await attackerPage.text()).find((f) => f.method === 'post')?.fields.csrf_token;
      expect(attackerToken).toBeDefined();
      const res = await postForm(server.url + LOGOUT, { csrf_token: attackerToken! }, { cookie: browser.jar.header() });
      expect(res.status).toBeLessThan(500);
      expect(await sessionAlive(browser)).toBe(true);
      expect(await tokenWorks(tokens.access_token)).toBe(true);
    });

    test('with a valid id_token_hint, GET ends the session at once and redirects to the registered post_logout_redirect_uri with the state', async () => {
      const { browser, tokens } = await signedInBrowser();
      const res = await logoutLink(browser, { id_token_hint: tokens.id_token, post_logout_redirect_uri: bye, state: 'bye-state' });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(`${bye}?state=bye-state`);
      expect(await sessionAlive(browser)).toBe(false);
      expect(await tokenWorks(tokens.access_token)).toBe(false);

      const other = await signedInBrowser();
      const plain = await logoutLink(other.browser, { id_token_hint: other.tokens.id_token });
      expect(plain.status).toBe(200);
      expect(htmlForms(await plain.text()).filter((f) => f.method === 'post')).toHaveLength(0);
      expect(await sessionAlive(other.browser)).toBe(false);
    });

    test('with a valid id_token_hint and no state, the redirect is the registered URI exactly (no stray "?")', async () => {
      const { browser, tokens } = await signedInBrowser();
      const res = await logoutLink(browser, { id_token_hint: tokens.id_token, post_logout_redirect_uri: bye });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe(bye);
      expect(await sessionAlive(browser)).toBe(false);
    });
  });

  describe('RFC 9207 iss in the authorization response', () => {
    const issuer = () => server.ctx.config.publicUrl;

    test('discovery announces authorization_response_iss_parameter_supported', async () => {
      const res = await get(`${server.url}/.well-known/openid-configuration`);
      const meta = (await res.json()) as Record<string, unknown>;
      expect(meta.issuer).toBe(issuer());
      expect(meta.authorization_response_iss_parameter_supported).toBe(true);
      const oauth = (await (await get(`${server.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
      expect(oauth.authorization_response_iss_parameter_supported).toBe(true);
    });

    test('a successful redirect carries iss, after the login form and through SSO alike', async () => {
      const browser = new Browser(server);
      const first = await obtainCode(browser, app, 'grace', 'grace-password-1');
      expect(first.code).toBeDefined();
      expect(first.iss).toBe(issuer());
      const again = await browser.authorize(authorizeQuery());
      expect(again.status).toBe(302);
      expect(locationQuery(again)).toMatchObject({ state: 'st', iss: issuer() });
      expect(locationQuery(again).code).toBeDefined();
    });

    test('error redirects carry iss: login_required, access_denied, invalid_scope', async () => {
      const stranger = new Browser(server);
      const none = await stranger.authorize(authorizeQuery({ prompt: 'none' }));
      expect(none.status).toBe(302);
      expect(locationQuery(none)).toMatchObject({ error: 'login_required', state: 'st', iss: issuer() });

      const consenting = await server.client({ requireConsent: true });
      const browser = new Browser(server);
      const login = await browser.authorize({
        client_id: consenting.clientId,
        redirect_uri: consenting.redirectUri,
        response_type: 'code',
        state: 'c1',
      });
      const consent = await browser.submit(login, { username: 'grace', password: 'grace-password-1' });
      expect(consent.status).toBe(200);
      const denied = await browser.submit(consent, { decision: 'deny' });
      expect(denied.status).toBe(303);
      expect(locationQuery(denied)).toMatchObject({ error: 'access_denied', state: 'c1', iss: issuer() });

      const badScope = await new Browser(server).authorize(authorizeQuery({ scope: 'openid not-a-scope-of-this-client' }));
      expect(badScope.status).toBe(302);
      expect(locationQuery(badScope)).toMatchObject({ error: 'invalid_scope', state: 'st', iss: issuer() });
    });
  });
});
