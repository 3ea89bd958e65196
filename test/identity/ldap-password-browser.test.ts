import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Client } from 'ldapts';
import type { Browser } from 'playwright-core';
import { PEOPLE } from '../fixtures/ldap/directory.ts';
import { launchChromium } from '../helpers/chromium.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

/** docs/identity-backends.md's change step as a user meets it in Chromium: a password that must change, at the account page's sign-in. */
describe('a directory password that must change, in Chromium', () => {
  let slapd: Slapd;
  let server: TestServer;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true, policy: { pwdMinLength: '8', pwdCheckQuality: '2', pwdMustChange: 'TRUE' } });
    const port = await freePort();
    server = await startTestServer('sqlite', {
      ...ldapChain(ldapBackendConfig(slapd, { passwordChange: true })),
      port,
      publicUrl: `http://localhost:${port}`,
    });
    base = `http://localhost:${port}`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await slapd?.destroy();
  });

  test('signs in, is asked for a new password, refused a short one in words, then lands on the account', async () => {
    const dn = `uid=nina,${PEOPLE}`;
    await slapd.add({ dn, attrs: { objectClass: 'inetOrgPerson', uid: 'nina', cn: 'Nina', sn: 'Nina', userPassword: 'nina-first-pw' } });
    await slapd.modify(dn, 'pwdReset', ['TRUE'], { relax: true });
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${base}/account`);
    await page.fill('#username', 'nina');
    await page.fill('#password', 'nina-first-pw');
    await page.click('button[type=submit]');
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    expect(await page.getByRole('status').innerText()).toContain('must be changed');

    await page.fill('#new-password', 'short');
    await page.fill('#new-password-again', 'short');
    await page.click('button[type=submit]');
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').innerText()).toContain('The new password is too short.');

    await page.fill('#new-password', 'nina-second-pw');
    await page.fill('#new-password-again', 'nina-second-pw');
    await page.click('button[type=submit]');
    await page.getByRole('heading', { name: 'Your account' }).waitFor();

    const direct = new Client({ url: slapd.url, timeout: 3000 });
    try {
      await direct.bind(dn, 'nina-second-pw');
    } finally {
      await direct.unbind();
    }
  });
});
