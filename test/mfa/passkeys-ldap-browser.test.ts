import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, pageWithPasskeys } from '../helpers/chromium.ts';
import { people, personDn } from '../fixtures/ldap/directory.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

/**
 * A directory user's passkey (docs/multi-factor-sign-in.md: factors live on the local record, for every backend). A passkey
 * alone never sends the directory a password, so the sign-in asks the directory whether the account
 * is still there and enabled: a user disabled in the directory cannot sign in with a passkey.
 */
describe('a directory user with a passkey, in Chromium', () => {
  let slapd: Slapd;
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;

  beforeAll(async () => {
    slapd = await startSlapd();
    const port = await freePort();
    server = await startTestServer('sqlite', { ...ldapChain(ldapBackendConfig(slapd)), port, publicUrl: `http://localhost:${port}` });
    base = `http://localhost:${port}`;
    browser = await launchChromium();
    context = await browser.newContext();
    page = await pageWithPasskeys(context);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await slapd?.destroy();
  });

  /**
   * Signs in with the passkey alone and answers the heading of the page it ends on. The passkey
   * script fetches its options, asks the authenticator and only then posts the form: the click
   * returns before that on a busy machine, while the login page (whose heading is "Sign in" too)
   * is still shown. So this waits for an outcome: the account page, the login page again with an
   * alert, or the script's own message when the authenticator failed.
   */
  const signInWithPasskey = async () => {
    await context.clearCookies();
    await page.goto(`${base}/account`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.click('text=Sign in with a passkey');
    const scriptMessage = page.locator('form[data-passkey] [role=status]').filter({ hasText: /\S/ });
    await page.getByRole('heading', { name: 'Your account' }).or(page.getByRole('alert')).or(scriptMessage).first().waitFor();
    return (await page.locator('h1').innerText()).trim();
  };

  test('the passkey works while the directory account is enabled, and stops when it is disabled', async () => {
    await page.goto(`${base}/account`);
    await page.fill('input[name=username]', 'alice');
    await page.fill('input[name=password]', people.alice.password);
    await page.click('form:not([data-passkey]) button[type=submit]');
    await page.waitForSelector('text=Your account');
    await page.click('text=Add a passkey');
    await page.waitForSelector('#recovery-codes code');

    expect(await signInWithPasskey()).toBe('Your account');

    await slapd.modify(personDn(people.alice), 'userAccountControl', ['514']);
    try {
      expect(await signInWithPasskey()).toBe('Sign in');
      await expect(page.getByRole('alert').innerText()).resolves.toContain('not accepted');
    } finally {
      await slapd.modify(personDn(people.alice), 'userAccountControl', ['512']);
    }
  });
});
