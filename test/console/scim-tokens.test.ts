import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { buildConsoleIfStale, checkSection, expectOnlyOwnOrigin, launch, signIn, watchedContext, type Width } from './harness.ts';

/**
 * docs/scim-provisioning.md "Tokens" in the admin console: the SCIM tokens section lists the tokens,
 * makes one for a `plugin: scim` backend (shown once, with a copy button and the warning) that the
 * SCIM endpoint then takes, and revokes it after a confirmation, after which the endpoint refuses it.
 */
let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  buildConsoleIfStale();
  [server, browser] = await Promise.all([
    startTestServer('sqlite', {
      identity: {
        backends: [
          { id: 'local', plugin: 'database' },
          { id: 'hr', plugin: 'scim' },
        ],
      },
    }),
    launch(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const scimStatus = async (token: string) =>
  (await fetch(`${server.url}/scim/v2/Users?count=1`, { headers: { authorization: `Bearer ${token}` } })).status;

describe.each(['desktop', 'phone'] as const)('SCIM tokens in the console at %s width', (width: Width) => {
  let page: Page;
  let requests: string[];
  let close: () => Promise<void>;

  beforeAll(async () => {
    const watched = await watchedContext(browser, width);
    ({ page, requests } = watched);
    close = () => watched.context.close();
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
  });
  afterAll(() => close());

  test('make a token: shown once with a copy button and a warning; it works at /scim/v2; revoked, it does not', async () => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'SCIM tokens' }).click();
    await page.getByRole('heading', { level: 1, name: 'SCIM tokens' }).waitFor();
    await checkSection(page, 'scim-tokens', width);

    await page.getByRole('button', { name: 'New SCIM token' }).click();
    await expect(page.getByLabel('Backend').inputValue()).resolves.toBe('hr');
    await page.getByLabel('Description').fill(`Entra at ${width}`);
    await page.getByRole('button', { name: 'Create token' }).click();
    const shown = page.locator('#new-scim-token');
    await shown.waitFor();
    const token = (await shown.textContent())!;
    expect(token).toMatch(/^lks_scim_[A-Za-z0-9_-]{43}$/);
    await expect(page.getByRole('alert').first().textContent()).resolves.toContain('it is shown only this once');
    await page.getByRole('button', { name: 'Copy the SCIM token' }).waitFor();
    await checkSection(page, 'scim-tokens-created', width);
    expect(await scimStatus(token)).toBe(200);

    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.locator('#new-scim-token').count()).toBe(0);
    const row = page.getByRole('row').filter({ hasText: `Entra at ${width}` });
    await expect(row.textContent()).resolves.toContain('hr');
    // The list never shows the secret again.
    expect(await page.locator('main').textContent()).not.toContain(token);

    await page.getByRole('button', { name: `Revoke Entra at ${width}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await page.getByText(`Entra at ${width} is revoked`).waitFor();
    await page
      .getByRole('row')
      .filter({ hasText: `Entra at ${width}` })
      .waitFor({ state: 'detached' });
    expect(await scimStatus(token)).toBe(401);
    expectOnlyOwnOrigin(server, requests);
  });
});
