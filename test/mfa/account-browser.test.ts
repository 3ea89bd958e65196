import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { serverNow } from '../helpers/clock.ts';
import { codeAt } from '../helpers/totp.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The account page in Debian's Chromium at phone and desktop width: sign in, enrol TOTP from the QR
 * page, see the recovery codes once, sign in again with the second step. Screenshots go to
 * SCREENSHOT_DIR when it is set (to be looked at).
 */
describe.each([
  ['phone', 390, 844],
  ['desktop', 1280, 800],
])('the account page in Chromium (%s)', (name, width, height) => {
  let server: TestServer;
  let browser: Browser;
  const shoot = async (page: Page, what: string) => {
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${what}-${name}.png`, fullPage: true });
  };
  const fitsWidth = (page: Page) => page.evaluate(() => document.scrollingElement!.scrollWidth <= window.innerWidth);

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('grace', 'grace-password-1');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('enrol an authenticator app, keep the recovery codes, and sign in with the second step', async () => {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    const problems: string[] = [];
    // A CSP refusal shows as a console error ("Refused to …"); the browser's own /favicon.ico 404 is no problem.
    page.on('console', (m) => m.type() === 'error' && /Refused|Content Security Policy/.test(m.text()) && problems.push(m.text()));

    await page.goto(`${server.url}/account`);
    await page.fill('input[name=username]', 'grace');
    await page.fill('input[name=password]', 'grace-password-1');
    await page.click('button[type=submit]');
    await expect(page.getByRole('heading', { name: 'Your account' }).isVisible()).resolves.toBe(true);
    expect(await fitsWidth(page)).toBe(true);
    await shoot(page, 'account');

    await page.click('text=Set up an authenticator app');
    const secret = (await page.textContent('#totp-secret'))!.trim();
    await expect(page.locator('.qr svg').isVisible()).resolves.toBe(true);
    expect(await fitsWidth(page)).toBe(true);
    await shoot(page, 'enrol');
    await page.fill('input[name=code]', codeAt(secret, serverNow()));
    await page.click('button[type=submit]');
    await expect(page.locator('#recovery-codes code').count()).resolves.toBe(10);
    expect(await fitsWidth(page)).toBe(true);
    await shoot(page, 'recovery-codes');
    await page.click('button[type=submit]');
    await expect(page.getByText('unused recovery codes left').isVisible()).resolves.toBe(true);
    await shoot(page, 'account-with-totp');

    // A new browser: the password, then the second step.
    const fresh = await (await browser.newContext({ viewport: { width, height } })).newPage();
    await fresh.goto(`${server.url}/account`);
    await fresh.fill('input[name=username]', 'grace');
    await fresh.fill('input[name=password]', 'grace-password-1');
    await fresh.click('button[type=submit]');
    await expect(fresh.getByRole('heading', { name: 'Confirm it is you' }).isVisible()).resolves.toBe(true);
    expect(await fitsWidth(fresh)).toBe(true);
    await shoot(fresh, 'second-step');
    await fresh.fill('input[name=code]', codeAt(secret, serverNow() + 30_000));
    await fresh.click('button[type=submit]');
    await expect(fresh.getByRole('heading', { name: 'Your account' }).isVisible()).resolves.toBe(true);
    expect(problems).toEqual([]);
  });
});
