import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { build } from 'esbuild';
import express from 'express';
import type { Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The SPA: oidc-client-ts's UserManager configured from discovery alone. On /callback.html it completes
 * the code exchange and reads userinfo with the access token; the test drives the rest through `window.spa`.
 * The outcome is shown in #status (`data-state` = signed-in | error).
 */
const SPA_SOURCE = `
import { UserManager, WebStorageStateStore } from 'oidc-client-ts';
const { authority, clientId } = window.SPA_CONFIG;
const manager = new UserManager({
  authority,
  client_id: clientId,
  redirect_uri: location.origin + '/callback.html',
  post_logout_redirect_uri: location.origin + '/signed-out.html',
  response_type: 'code',
  scope: 'openid profile',
  userStore: new WebStorageStateStore({ store: window.sessionStorage }),
});
const show = (state, text) => {
  const status = document.getElementById('status');
  status.dataset.state = state;
  status.textContent = text;
};
const userinfo = async (user) => {
  const res = await fetch(authority + '/connect/v10/userinfo', { headers: { authorization: 'Bearer ' + user.access_token } });
  return res.json();
};
window.spa = {
  signIn: () => manager.signinRedirect(),
  async refresh() {
    const before = await manager.getUser();
    const after = await manager.signinSilent();
    return { before: before.access_token, after: after.access_token, userinfo: await userinfo(after) };
  },
  signOut: () => manager.signoutRedirect(),
};
if (location.pathname === '/callback.html') {
  manager.signinRedirectCallback().then(
    async (user) => {
      const info = await userinfo(user);
      show('signed-in', info.sub + ' ' + info.name);
    },
    (err) => show('error', String(err)),
  );
}
`;

async function bundleSpa(): Promise<string> {
  const out = await build({
    stdin: { contents: SPA_SOURCE, resolveDir: process.cwd(), sourcefile: 'spa.js', loader: 'js' },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  });
  return out.outputFiles[0]!.text;
}

interface Spa {
  origin: string;
  /** The client id its pages use; set once the client is registered. */
  config: { authority: string; clientId: string };
  close(): Promise<void>;
}

/** The SPA on its own loopback port: index.html, callback.html, signed-out.html and app.js. */
async function spaServer(appJs: string, authority: string): Promise<Spa> {
  const port = await freePort();
  const config = { authority, clientId: '' };
  const html = (title: string) =>
    `<!doctype html><title>${title}</title><p id="status" data-state="idle">${title}</p>` +
    `<script>window.SPA_CONFIG = ${JSON.stringify(config)};</script><script src="/app.js"></script>`;
  const app = express()
    .get('/app.js', (_req, res) => void res.type('js').send(appJs))
    .get(['/', '/index.html'], (_req, res) => void res.type('html').send(html('SPA')))
    .get('/callback.html', (_req, res) => void res.type('html').send(html('Callback')))
    .get('/signed-out.html', (_req, res) => void res.type('html').send(html('Signed out')));
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return { origin: `http://127.0.0.1:${port}`, config, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** docs/connect-an-application.md, browser apps: a stock oidc-client-ts SPA signs in, refreshes and signs out from another origin. */
describe('an oidc-client-ts SPA in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let spa: Spa;
  let foreign: Spa;
  let userId: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    userId = await server.user('ivan', 'ivan-password-1', { displayName: 'Ivan Petrov' });
    const appJs = await bundleSpa();
    [spa, foreign] = await Promise.all([spaServer(appJs, server.url), spaServer(appJs, server.url)]);
    const grants = { confidential: false, grantTypes: ['authorization_code' as const, 'refresh_token' as const] };
    // The SPA's client: its web origins are its redirect URI's origin (the default).
    spa.config.clientId = (
      await server.client({
        ...grants,
        redirectUris: [`${spa.origin}/callback.html`],
        postLogoutRedirectUris: [`${spa.origin}/signed-out.html`],
      })
    ).clientId;
    // A client that may redirect to the foreign origin, but whose only web origin is the SPA's.
    foreign.config.clientId = (
      await server.client({
        ...grants,
        redirectUris: [`${foreign.origin}/callback.html`],
        webOrigins: [spa.origin],
      })
    ).clientId;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([spa?.close(), foreign?.close()]);
    await server?.stop();
  });

  /** From the SPA's page at `origin`: signinRedirect, the real login page, back to callback.html. */
  async function signIn(page: Page, origin: string): Promise<void> {
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => 'spa' in window);
    await page.evaluate(() => void (window as unknown as { spa: { signIn(): Promise<void> } }).spa.signIn());
    await page.waitForURL((url) => url.origin === server.url);
    await page.fill('input[name=username]', 'ivan');
    await page.fill('input[name=password]', 'ivan-password-1');
    await page.click('button[type=submit]');
    await page.waitForURL((url) => url.href.startsWith(`${origin}/callback.html?`));
    await page.waitForSelector('#status[data-state=signed-in], #status[data-state=error]');
  }

  test('signs in with code + PKCE, reads userinfo, refreshes and signs out', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, spa.origin);
    expect(await page.textContent('#status')).toBe(`${userId} Ivan Petrov`);
    const ssoCookie = async () => (await context.cookies(server.url)).find((c) => c.name === 'lk_sso');
    expect(await ssoCookie()).toBeDefined();

    // signinSilent with a refresh token in the store is the refresh_token grant (no iframe).
    const refreshed = await page.evaluate(() =>
      (window as unknown as { spa: { refresh(): Promise<{ before: string; after: string; userinfo: { sub: string } }> } }).spa.refresh(),
    );
    expect(refreshed.after).toBeTruthy();
    expect(refreshed.after).not.toBe(refreshed.before);
    expect(refreshed.userinfo.sub).toBe(userId);

    // RP-initiated logout with the id_token_hint the library sends: no confirmation, straight back.
    await page.evaluate(() => void (window as unknown as { spa: { signOut(): Promise<void> } }).spa.signOut());
    await page.waitForURL((url) => url.href.startsWith(`${spa.origin}/signed-out.html`));
    expect(await ssoCookie()).toBeUndefined();
    await context.close();
  });

  test('the same SPA on an origin outside the client’s web origins fails at the token exchange', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (msg) => void (msg.type() === 'error' && consoleErrors.push(msg.text())));
    await signIn(page, foreign.origin);
    // Chromium says why: the token endpoint's answer carries no Access-Control-Allow-Origin for this origin.
    expect(consoleErrors.some((e) => e.includes('/oauth/v20/token') && e.includes('CORS policy'))).toBe(true);
    expect(await page.getAttribute('#status', 'data-state')).toBe('error');
    expect(await page.textContent('#status')).toMatch(/Failed to fetch|NetworkError|Network Error/i);
    await context.close();
  });
});
