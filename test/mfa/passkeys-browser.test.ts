import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, pageWithPasskeys, startClientApp } from '../helpers/chromium.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Passkeys in Debian's Chromium with a virtual authenticator (Chrome DevTools Protocol: ctap2,
 * internal transport, resident keys, user verification): register one from the account page, sign
 * in with it and no password, and use it as the second step after a password. PUBLIC_URL is at
 * `localhost`: browsers refuse an IP address as the relying party id.
 */
describe('passkeys in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let appServer: Awaited<ReturnType<typeof startClientApp>>;
  let callback: string;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    const port = await freePort();
    server = await startTestServer('sqlite', { port, publicUrl: `http://localhost:${port}` });
    await server.user('heidi', 'heidi-password-1');
    appServer = await startClientApp();
    callback = appServer.callback;
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    page = await pageWithPasskeys(context);
  });
  afterAll(async () => {
    await browser?.close();
    appServer?.close();
    await server?.stop();
  });

  const shoot = async (what: string) => {
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${what}.png`, fullPage: true });
  };

  async function idTokenAfterRedirect(
    client: { clientId: string; clientSecret: string | null },
    state: string,
  ): Promise<Record<string, unknown>> {
    await page.waitForURL((u) => u.href.startsWith(callback));
    const url = new URL(page.url());
    expect(url.searchParams.get('state')).toBe(state);
    const res = await exchangeCode(server, { ...client, redirectUri: callback }, url.searchParams.get('code')!);
    return decodeJwt(((await res.json()) as { id_token: string }).id_token);
  }

  test('register a passkey at the account page, then sign in with it alone, then as the second step', async () => {
    await page.goto(`${server.url.replace('127.0.0.1', 'localhost')}/account`);
    await page.fill('input[name=username]', 'heidi');
    await page.fill('input[name=password]', 'heidi-password-1');
    await page.click('form:not([data-passkey]) button[type=submit]');
    await expect(page.getByRole('heading', { name: 'Your account' }).isVisible()).resolves.toBe(true);

    await page.fill('input[name=name]', 'Test laptop');
    await page.click('text=Add a passkey');
    // The first factor: its recovery codes, once.
    await page.waitForSelector('#recovery-codes code', { timeout: 15_000 }).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await page.locator('main').innerText()}`);
    });
    await expect(page.locator('#recovery-codes code').count()).resolves.toBe(10);
    await page.click('button[type=submit]');
    await page.waitForSelector('text=Test laptop');
    await shoot('account-passkey');

    const client = await server.client({ redirectUris: [callback], scopes: ['openid'] });
    const base = server.url.replace('127.0.0.1', 'localhost');
    const authorize = (state: string) =>
      `${base}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: callback, response_type: 'code', scope: 'openid', state })}`;

    // Without a session: the login page's passkey button, no username or password.
    await context.clearCookies();
    await page.goto(authorize('p1'));
    await shoot('login-with-passkey');
    await page.click('text=Sign in with a passkey');
    const alone = await idTokenAfterRedirect(client, 'p1');
    expect(alone.amr).toEqual(['hwk', 'mfa']);

    // A password first: the second step offers the passkey.
    await context.clearCookies();
    await page.goto(authorize('p2'));
    await page.fill('input[name=username]', 'heidi');
    await page.fill('input[name=password]', 'heidi-password-1');
    await page.click('form:not([data-passkey]) button[type=submit]');
    await page.waitForSelector('text=Confirm it is you');
    await shoot('second-step-passkey');
    await page.click('text=Use a passkey');
    const second = await idTokenAfterRedirect(client, 'p2');
    expect(second.amr).toEqual(['pwd', 'hwk', 'mfa']);

    const stored = JSON.stringify(await server.sql('passkeys').select());
    expect(stored).toContain('Test laptop');
    expect(JSON.parse(stored)).toHaveLength(1);
  });
});
