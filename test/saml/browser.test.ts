import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser } from 'playwright-core';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { launchChromium } from '../helpers/chromium.ts';
import { startMellon, type Mellon } from '../helpers/mellon.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * docs/saml-applications.md in a real headless Chromium: from an Apache mod_auth_mellon application to Latchkey's login
 * page and back with the SAML Response the page posts by itself, as a person sees it.
 */
describe('SAML sign-in in Chromium through Apache mod_auth_mellon', () => {
  let server: TestServer;
  let mellon: Mellon;
  let browser: Browser;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('grace', 'grace-password-1', { email: 'grace@example.com', displayName: 'Grace Hopper', groups: ['engineering'] });
    const idp = await fetch(`${server.url}/saml/v20/metadata`);
    expect(idp.status).toBe(200);
    mellon = await startMellon({ idpMetadataXml: await idp.text() });
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD);
    const registered = await graphqlPost(
      server,
      access_token,
      'mutation($xml: String!) { registerSamlServiceProvider(metadataXml: $xml) { entityId } }',
      { xml: mellon.metadataXml },
    );
    expect(registered.errors).toBeUndefined();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await mellon?.stop();
    await server?.stop();
  });

  test('the application sends the person to the login page; signing in lands on its page with the attributes', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const refused: string[] = [];
    page.on('console', (m) => m.type() === 'error' && refused.push(m.text())); // a CSP that blocks the auto-post shows here

    await page.goto(`${mellon.url}/secret/`);
    await page.waitForURL((u) => u.href.startsWith(`${server.url}/`));
    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/saml-login.png` });

    await page.fill('input[name=username]', 'grace');
    await page.fill('input[name=password]', 'grace-password-1');
    await page.click('button[type=submit]');
    // The page Latchkey answers with posts the Response to mellon's ACS by itself; mellon then
    // redirects to the page first asked for.
    await page.waitForURL(`${mellon.url}/secret/`).catch((err: Error) => {
      throw new Error(
        `${err.message}\nstopped at ${page.url()}; console: ${refused.join(' | ')}\n--- Apache error log ---\n${mellon.errorLog()}`,
      );
    });
    const text = (await page.textContent('body')) ?? '';
    expect(text).toContain('MELLON_uid=grace');
    expect(text).toContain('MELLON_mail=grace@example.com');
    expect(text).toContain('MELLON_groups=engineering');
    if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/saml-attributes.png` });

    // The SSO session: after mellon's own session is gone, the application gets the user back
    // without the login page.
    await context.clearCookies({ name: 'mellon-cookie' });
    await page.goto(`${mellon.url}/secret/`);
    await page.waitForURL(`${mellon.url}/secret/`);
    expect(await page.textContent('body')).toContain('MELLON_uid=grace');

    // Single logout from the application ends Latchkey's session too: the next visit shows the login page.
    await page.goto(`${mellon.url}/mellon/logout?ReturnTo=${encodeURIComponent(`${mellon.url}/signed-out.html`)}`);
    await page.waitForURL(`${mellon.url}/signed-out.html`);
    await expect(page.getByRole('heading', { name: 'Signed out' }).isVisible()).resolves.toBe(true);
    await page.goto(`${mellon.url}/secret/`);
    await page.waitForURL((u) => u.href.startsWith(`${server.url}/`));
    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
    await context.close();
  });
});
