import { expect, test } from '@jest/globals';
import { ADMIN_PASSWORD } from '../helpers/server.ts';
import { consoleSuite, signIn, watchedContext } from './harness.ts';

/**
 * On a busy machine a page's frames come late, and Preact runs a `useEffect` after the next frame, or
 * before the component's next render if that comes first. The audit filters followed the URL in such
 * an effect: after a filter was applied, the first keystroke's render ran it, the URL's filters replaced
 * what had just been typed, and Filter then applied the old ones (console.test.ts timed out waiting
 * for the URL). Here every frame, and Preact's 35 ms fallback timer, comes 700 ms late.
 */
const suite = consoleSuite();

test('what is typed right after a filter is applied, or cleared, is what the next Filter applies', async () => {
  const { server, browser } = suite;
  const { context, page } = await watchedContext(browser, 'desktop');
  try {
    await page.addInitScript(() => {
      const later = window.setTimeout;
      window.requestAnimationFrame = (cb: FrameRequestCallback) => later(() => cb(performance.now()), 700) as unknown as number;
      window.setTimeout = ((fn: () => void, ms?: number, ...rest: unknown[]) =>
        later(fn, ms === 35 ? 700 : ms, ...rest)) as typeof setTimeout;
    });
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Audit events' }).click();
    await page.getByRole('row').nth(1).waitFor();

    /** Whether the list shows only admin changes (the filtered list has come) or not only (the whole trail has). */
    const listed = (onlyAdminChanges: boolean) =>
      page.waitForFunction((only) => {
        const kinds = [...document.querySelectorAll('tbody th')].map((th) => th.textContent!.startsWith('admin.change'));
        return kinds.length > 0 && (only ? kinds.every(Boolean) : !kinds.every(Boolean));
      }, onlyAdminChanges);

    // A person types the next filter while the list of the last one loads, and presses Filter once it is there.
    await page.getByLabel('Kind').fill('admin.change');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('kind') === 'admin.change');
    await page.getByLabel('Client ID').fill('admin-cli');
    await listed(true);
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    expect(Object.fromEntries(new URL(page.url()).searchParams)).toEqual({ kind: 'admin.change', clientId: 'admin-cli' });

    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('User ID').fill('someone');
    await listed(false);
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    expect(Object.fromEntries(new URL(page.url()).searchParams)).toEqual({ userId: 'someone' });
  } finally {
    await context.close();
  }
});
