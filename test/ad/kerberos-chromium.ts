import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { launchChromium } from '../helpers/chromium.ts';
import type { DatabaseKind } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { KERBEROS_HOST, kerberosFixture, type KerberosFixture, type Tickets } from '../helpers/kerberos.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapChain } from '../helpers/slapd.ts';
import { adConfig, dc } from './harness.ts';

/**
 * The application of these tests: a loopback HTTP server that records each code it is sent at
 * `/callback`. It also answers `/warm-up` with a Negotiate challenge (see `warmUp`).
 */
async function startCodeRecorder(): Promise<{ callback: string; origin: string; codes: URLSearchParams[]; close(): void }> {
  const codes: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://app');
    if (url.pathname === '/callback') {
      codes.push(url.searchParams);
      res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>The application</h1>');
    } else if (url.pathname === '/warm-up') {
      res.writeHead(401, { 'www-authenticate': 'Negotiate', 'content-type': 'text/html' }).end('<h1>Warm-up</h1>');
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { callback: `${origin}/callback`, origin, codes, close: () => server.close() };
}

/**
 * Debian's Chromium 156 refuses the first Negotiate challenge it meets after starting, before its
 * GSSAPI library is even loaded (NetLog: AUTH_HANDLER_CREATE_RESULT `ERR_UNSUPPORTED_AUTH_SCHEME`,
 * no AUTH_LIBRARY_LOAD), and handles every later one. One challenge from the application's origin,
 * which is on no allowlist and so never gets a ticket, takes that first refusal; without it the first
 * test would see the form for a reason that is Chromium's, not Latchkey's.
 */
async function warmUp(page: Page, appOrigin: string): Promise<void> {
  const res = await page.goto(`${appOrigin}/warm-up`);
  expect(res?.status()).toBe(401);
}

/**
 * Desktop single sign-on in a real browser (docs/windows-desktop-sso.md "Browsers"): Debian's
 * Chromium, given a ticket cache filled by `kinit` against the Samba DC's KDC and the allowlist a
 * domain's policy would set (`--auth-server-allowlist`), opens an application's authorize URL and
 * lands back at the application with a code, nothing typed; without the allowlist, or without a
 * ticket, the same URL shows the login form at once, from the body of the 401.
 */
export function kerberosChromiumTests(kind: DatabaseKind): void {
  describe(`desktop single sign-on in Chromium (${kind})`, () => {
    let krb: KerberosFixture;
    let server: TestServer;
    let app: Awaited<ReturnType<typeof startCodeRecorder>>;
    let client: { clientId: string; clientSecret: string; redirectUri: string };
    let tickets: Tickets;
    /** PUBLIC_URL: the SPN's host, as a browser on the domain reaches it. */
    let publicUrl: string;
    const browsers: Browser[] = [];

    /** Chromium with the switches given and the environment a logged-on desktop user would have. */
    async function browserWith(args: string[], env: Record<string, string>): Promise<Page> {
      const browser = await launchChromium({ args, env });
      browsers.push(browser);
      const context = await browser.newContext();
      context.setDefaultTimeout(15_000);
      const page = await context.newPage();
      await warmUp(page, app.origin);
      return page;
    }

    /** What the domain's browser policy sets: only Latchkey's host may have tickets, under its own name. */
    const allowlist = [`--auth-server-allowlist=${KERBEROS_HOST}`, '--disable-auth-negotiate-cname-lookup'];

    const authorizeUrl = (state: string) =>
      `${publicUrl}/oauth/v20/authorize?${new URLSearchParams({
        client_id: client.clientId,
        redirect_uri: client.redirectUri,
        response_type: 'code',
        scope: 'openid profile',
        state,
      })}`;

    /** The code the application received for `state`, once it has. */
    async function codeFor(state: string): Promise<string> {
      await eventually('the application received a code', async () => app.codes.some((q) => q.get('state') === state));
      return app.codes.find((q) => q.get('state') === state)!.get('code')!;
    }

    async function idTokenFor(code: string): Promise<Record<string, unknown>> {
      const res = await exchangeCode(server, client, code);
      const body = (await res.json()) as { id_token?: string; error?: string };
      expect([res.status, body.error]).toEqual([200, undefined]);
      return decodeJwt(body.id_token!);
    }

    beforeAll(async () => {
      krb = await kerberosFixture(dc());
      const port = await freePort();
      publicUrl = krb.serverAt(port).publicUrl;
      app = await startCodeRecorder();
      server = await startTestServer(kind, { ...krb.serverAt(port), ...ldapChain(adConfig({ kerberos: krb.backendConfig() })) });
      await krb.user('desk-kim', 'Kim-Desktop-Pw-1!');
      tickets = await krb.kinit('desk-kim', 'Kim-Desktop-Pw-1!');
      // Registered as an administrator would, through the admin API.
      const admin = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
      const made = await graphqlPost(
        server,
        admin.access_token,
        'mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId } clientSecret } }',
        { i: { name: 'Intranet', redirectUris: [app.callback], scopes: ['openid', 'profile'], grantTypes: ['AUTHORIZATION_CODE'] } },
      );
      expect(made.errors).toBeUndefined();
      const registration = made.data!.registerClient as { client: { clientId: string }; clientSecret: string };
      client = { clientId: registration.client.clientId, clientSecret: registration.clientSecret, redirectUri: app.callback };
    });
    afterAll(async () => {
      await Promise.all(browsers.map((b) => b.close()));
      app?.close();
      await server?.stop();
    });

    test('with the allowlist and a ticket: the authorize URL lands at the application with a code, nothing typed', async () => {
      const page = await browserWith(allowlist, tickets.env);
      const posts: string[] = [];
      page.on('request', (r) => {
        if (r.method() !== 'GET') posts.push(`${r.method()} ${r.url()}`);
      });
      const fromLatchkey: Array<{ status: number; negotiate: string | null }> = [];
      page.on('response', async (r) => {
        if (r.url().startsWith(publicUrl)) fromLatchkey.push({ status: r.status(), negotiate: await r.headerValue('www-authenticate') });
      });

      await page.goto(authorizeUrl('desk-1'));
      await page
        .waitForURL((u) => u.href.startsWith(app.callback))
        .catch(async (err: Error) => {
          throw new Error(`${err.message}\nthe page shows: ${await page.locator('body').innerText()}`);
        });
      await expect(page.getByRole('heading', { name: 'The application' }).isVisible()).resolves.toBe(true);
      expect(posts).toEqual([]);
      // The redirect to the application carries Kerberos's mutual-authentication token.
      expect(fromLatchkey).toEqual([{ status: 302, negotiate: expect.stringMatching(/^Negotiate [A-Za-z0-9+/]+=*$/) }]);

      const idToken = await idTokenFor(await codeFor('desk-1'));
      expect(idToken.amr).toEqual(['wia']);
      expect(idToken.preferred_username).toBe('desk-kim');
      // The browser asked the DC's KDC for Latchkey's service ticket, under the SPN's name.
      expect(await tickets.list()).toContain(`HTTP/${KERBEROS_HOST}@`);
    });

    test('without the allowlist: the login form at once, from the 401, and a password still signs in', async () => {
      const page = await browserWith([], tickets.env);
      const answer = await page.goto(authorizeUrl('desk-2'));
      expect(answer?.status()).toBe(401);
      expect(await answer?.headerValue('www-authenticate')).toMatch(/^Negotiate/);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();

      await page.fill('input[name=username]', 'desk-kim');
      await page.fill('input[name=password]', 'Kim-Desktop-Pw-1!');
      await page.click('button[type=submit]');
      await page.waitForURL((u) => u.href.startsWith(app.callback));
      expect((await idTokenFor(await codeFor('desk-2'))).amr).toEqual(['pwd']);
    });

    test('with the allowlist but no ticket (a computer outside the domain): the login form at once', async () => {
      const page = await browserWith(allowlist, {
        ...tickets.env,
        KRB5CCNAME: `FILE:${join(tmpdir(), `latchkey-no-tickets-${process.pid}`)}`,
      });
      const answer = await page.goto(authorizeUrl('desk-3'));
      expect(answer?.status()).toBe(401);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await expect(page.locator('input[name=password]').isVisible()).resolves.toBe(true);
      expect(app.codes.some((q) => q.get('state') === 'desk-3')).toBe(false);
    });
  });
}
