import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, startClientApp } from '../helpers/chromium.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The sign-in page in a real headless Chromium (Debian's package): sign in, SSO, consent once. */
describe('sign-in page in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let appServer: Awaited<ReturnType<typeof startClientApp>>;
  let callback: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('grace', 'grace-password-1', { displayName: 'Grace Hopper' });
    // The client application: a page at its redirect URI that the browser lands on.
    appServer = await startClientApp();
    callback = appServer.callback;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    appServer?.close();
    await server?.stop();
  });

  const authorizeUrl = (clientId: string, state: string) =>
    `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: callback, response_type: 'code', state, scope: 'openid profile' })}`;

  async function landedCode(page: Page, state: string): Promise<string> {
    await page.waitForURL((u) => u.href.startsWith(callback));
    const url = new URL(page.url());
    expect(url.searchParams.get('state')).toBe(state);
    expect(url.searchParams.get('tokencode')).toBe(url.searchParams.get('code'));
    return url.searchParams.get('code')!;
  }

  test('sign in, then SSO into a second client without a form, then consent once', async () => {
    const first = await server.client({ name: 'Wiki', redirectUris: [callback] });
    const second = await server.client({ name: 'Mail', redirectUris: [callback] });
    const third = await server.client({ name: 'Payroll', redirectUris: [callback], requireConsent: true });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();

    await page.goto(authorizeUrl(first.clientId, 's1'));
    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
    expect(await page.textContent('main')).toContain('Wiki');
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/login.png` });

    // A wrong password first: the form comes back with an error, not a redirect.
    await page.fill('input[name=username]', 'grace');
    await page.fill('input[name=password]', 'not-her-password');
    await page.click('button[type=submit]');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Invalid username or password');

    await page.fill('input[name=password]', 'grace-password-1');
    await page.click('button[type=submit]');
    const code = await landedCode(page, 's1');
    expect((await exchangeCode(server, { ...first, redirectUri: callback }, code)).status).toBe(200);

    const cookies = await context.cookies(server.url);
    const sso = cookies.find((c) => c.name === 'lk_sso');
    expect(sso?.httpOnly).toBe(true);
    expect(sso?.sameSite).toBe('Lax');

    // SSO: the second client's authorize request comes straight back with a code.
    await page.goto(authorizeUrl(second.clientId, 's2'));
    await landedCode(page, 's2');

    // Consent: asked the first time only.
    await page.goto(authorizeUrl(third.clientId, 's3'));
    await expect(page.getByRole('heading', { name: 'Allow access?' }).isVisible()).resolves.toBe(true);
    expect(await page.textContent('main')).toContain('Payroll');
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/consent.png` });
    await page.click('button[value=allow]');
    await landedCode(page, 's3');
    await page.goto(authorizeUrl(third.clientId, 's4'));
    await landedCode(page, 's4');
    await context.close();
  });

  test('the pages refuse to be framed', async () => {
    const client = await server.client({ redirectUris: [callback] });
    const res = await fetch(authorizeUrl(client.clientId, 'f'));
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  });
});
