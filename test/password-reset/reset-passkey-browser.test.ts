import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, pageWithPasskeys } from '../helpers/chromium.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { linkIn, MailServer } from './harness.ts';

/**
 * docs/password-reset-by-mail.md with docs/multi-factor-sign-in.md: the reset page's passkey button in Debian's Chromium with a virtual
 * authenticator, through the page's own script (`/assets/passkey.js`) under the strict CSP: the
 * passkey passes the second step, then the new password is set.
 */
describe('a passkey at the reset page, in Chromium', () => {
  let server: TestServer;
  let smtp: MailServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;

  beforeAll(async () => {
    smtp = await MailServer.start();
    const port = await freePort();
    base = `http://localhost:${port}`;
    server = await startTestServer('sqlite', {
      port,
      publicUrl: base,
      passwordReset: { enabled: true },
      smtp: { url: smtp.url, from: 'Latchkey <sso@example.com>' },
    });
    await server.user('lena', 'lena-password-1', { email: 'lena@example.com' });
    browser = await launchChromium();
    context = await browser.newContext();
    page = await pageWithPasskeys(context);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.close();
  });

  const fail = async (err: Error) => {
    throw new Error(`${err.message}\n${await page.locator('main').innerText()}`);
  };

  test('register a passkey, forget the password, pass the reset with the passkey, set the new one', async () => {
    await page.goto(`${base}/account`);
    await page.fill('input[name=username]', 'lena');
    await page.fill('input[name=password]', 'lena-password-1');
    await page.click('form:not([data-passkey]) button[type=submit]');
    await page.fill('input[name=name]', 'Test laptop');
    await page.click('text=Add a passkey');
    await page.waitForSelector('#recovery-codes code', { timeout: 15_000 }).catch(fail);
    await context.clearCookies();

    await page.goto(`${base}/password/forgot`);
    await page.fill('input[name=identifier]', 'lena');
    await page.click('button[type=submit]');
    await page.waitForSelector('#reset-sent');
    const { link } = linkIn(await smtp.nth('lena@example.com', 1));

    await page.goto(link);
    await expect(page.locator('input[name=code]').count()).resolves.toBe(1);
    await page.click('text=Confirm with a passkey');
    await page.waitForSelector('#reset-passkey-passed', { timeout: 15_000 }).catch(fail);
    await expect(page.locator('input[name=code]').count()).resolves.toBe(0);
    await page.fill('input[name=password]', 'lena-new-password');
    await page.fill('input[name=confirm]', 'lena-new-password');
    await page.click('form:not([data-passkey]) button[type=submit]');
    await page.waitForSelector('#reset-done').catch(fail);

    // The new password is right: the sign-in asks for the second factor next.
    await page.goto(`${base}/account`);
    await page.fill('input[name=username]', 'lena');
    await page.fill('input[name=password]', 'lena-new-password');
    await page.click('form:not([data-passkey]) button[type=submit]');
    await page.waitForSelector('text=Confirm it is you').catch(fail);
  });
});
