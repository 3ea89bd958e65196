import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { buildConsoleIfStale, checkSection, launch, signIn, watchedContext, type Width } from '../console/harness.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

/** The console's Backends page with a synced directory (docs/directory-sync.md "Watching it"): the last pass, and Sync now. */
describe.each(['desktop', 'phone'] as const)('directory sync in the console at %s width', (width: Width) => {
  let slapd: Slapd;
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let close: () => Promise<void>;

  beforeAll(async () => {
    buildConsoleIfStale();
    slapd = await startSlapd();
    [server, browser] = await Promise.all([
      startTestServer('sqlite', ldapChain(ldapBackendConfig(slapd, { sync: { interval: 300 } }))),
      launch(),
    ]);
    const watched = await watchedContext(browser, width);
    page = watched.page;
    close = () => watched.context.close();
  });
  afterAll(async () => {
    await close?.();
    await browser?.close();
    await server?.stop();
    await slapd?.destroy();
  });

  test('a synced directory shows its cadence and last pass; Sync now runs one and says what it did', async () => {
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Identity backends' }).click();
    const corp = page.getByRole('row').filter({ hasText: 'ldap' });
    await corp.waitFor();
    await expect(corp.textContent()).resolves.toMatch(/every 5 min/);
    // The database backend cannot be synced: no button.
    expect(await page.getByRole('button', { name: 'Sync local now' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Sync corp now' }).click();
    await page.getByText(/^The sync of corp is done: 4 users listed; 3 new/).waitFor();
    await corp.getByText('applied').waitFor();
    await expect(corp.textContent()).resolves.toMatch(/4 users listed; 3 new, 0 changed, 0 deprovisioned, 0 back/);
    await checkSection(page, 'backends-sync', width);
  });
});
