import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { codeAt } from '../helpers/totp.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import {
  buildConsoleIfStale,
  checkSection,
  expectOnlyOwnOrigin,
  launch,
  signIn,
  tokenStatus,
  watchedContext,
  type Width,
} from './harness.ts';

/**
 * docs/admin-console.md: the admin console at /admin, in Debian's Chromium at desktop and phone width, against a real
 * server. Each width walks every section: signs in through the login page, registers a client and
 * uses its secret, searches, rotates, deletes; creates a user and disables and enables them; finds
 * those changes in the audit trail; looks at the backends and keys. Every section is checked for
 * named controls (axe), sideways scrolling at 390 px and web storage, and photographed.
 */
let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  buildConsoleIfStale();
  [server, browser] = await Promise.all([startTestServer('sqlite'), launch()]);
  await server.user('bob', 'bob-password-1', { displayName: 'Bob Plain' });
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const passwordGrant = (username: string, password: string) =>
  tokenStatus(server, { grant_type: 'password', client_id: 'admin-cli', username, password });

async function openSection(page: Page, title: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: title }).click();
  await page.getByRole('heading', { level: 1, name: title }).waitFor();
}

describe.each(['desktop', 'phone'] as const)('the admin console at %s width', (width: Width) => {
  let page: Page;
  let requests: string[];
  let close: () => Promise<void>;
  const app = `Wiki ${width}`;
  const carol = `carol-${width}`;
  let clientId = '';

  beforeAll(async () => {
    const watched = await watchedContext(browser, width);
    ({ page, requests } = watched);
    close = () => watched.context.close();
  });
  afterAll(() => close());

  test('unauthenticated, /admin goes through the login page and back to the console', async () => {
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/admin/clients');
    await expect(page.getByText('Signed in as').textContent()).resolves.toContain('admin');
    await page.getByRole('cell', { name: 'admin-console' }).first().waitFor();
    await checkSection(page, 'clients', width);
  });

  test('register a client: an error is shown at the form naming the field; the secret shown once works', async () => {
    await page.getByRole('button', { name: 'Register a client' }).click();
    await page.getByLabel('Name', { exact: true }).fill(app);
    await page.getByLabel('Redirect URIs', { exact: true }).fill('http://wiki.example.com/callback');
    await page.getByLabel('Client credentials (service account)').check();
    await page.getByRole('button', { name: 'Register client' }).click();
    const form = page.locator('#client-form');
    await expect(form.getByRole('alert').textContent()).resolves.toMatch(/^Redirect URIs: .*http is allowed only for loopback hosts/);
    await expect(page.getByLabel('Redirect URIs', { exact: true }).getAttribute('aria-invalid')).resolves.toBe('true');
    await checkSection(page, 'client-form-error', width);

    await page.getByLabel('Redirect URIs', { exact: true }).fill('https://wiki.example.com/callback');
    await page.getByRole('button', { name: 'Register client' }).click();
    await page.getByRole('heading', { name: `The secret of ${app}` }).waitFor();
    clientId = (await page.locator('#new-client-id').textContent())!;
    const secret = (await page.locator('#new-client-secret').textContent())!;
    expect(await page.getByRole('button', { name: 'Copy client secret' }).isVisible()).toBe(true);
    await checkSection(page, 'client-secret', width);
    expect(await tokenStatus(server, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret })).toBe(200);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await expect(page.locator('#new-client-secret').count()).resolves.toBe(0);
  });

  test('search, edit, rotate the secret (the old one is refused, the new one works), delete after confirming', async () => {
    await page.getByLabel('Search clients by name or ID').fill(width);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 1);
    await page.getByRole('row').filter({ hasText: app }).waitFor();
    await expect(page.getByRole('cell', { name: 'admin-console' }).count()).resolves.toBe(0);

    await page.getByRole('button', { name: `Edit ${app}` }).click();
    await page.getByLabel('Scopes').fill('openid profile email groups');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(`${app} is saved.`).waitFor();
    expect((await server.ctx.clients.find(clientId))!.scopes).toEqual(['openid', 'profile', 'email', 'groups']);

    const before = (await server.ctx.clients.find(clientId))!;
    await page.getByRole('button', { name: `Rotate the secret of ${app}` }).click();
    const rotate = page.getByRole('dialog', { name: `Rotate the secret of ${app}?` });
    await checkSection(page, 'client-rotate-dialog', width);
    await rotate.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('heading', { name: `The secret of ${app}` }).waitFor();
    const secret = (await page.locator('#new-client-secret').textContent())!;
    expect((await server.ctx.clients.find(clientId))!.secretHash).not.toBe(before.secretHash);
    expect(await tokenStatus(server, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret })).toBe(200);
    await page.getByRole('button', { name: 'I have stored it' }).click();

    await page.getByRole('button', { name: `Delete ${app}` }).click();
    const confirm = page.getByRole('dialog', { name: `Delete ${app}?` });
    // Cancelling deletes nothing.
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await server.ctx.clients.find(clientId)).toBeDefined();
    await page.getByRole('button', { name: `Delete ${app}` }).click();
    await confirm.getByRole('button', { name: 'Delete client' }).click();
    await page.getByText(`${app} is deleted`).waitFor();
    await page.getByText(`No client matches “${width}”.`).waitFor();
    expect(await server.ctx.clients.find(clientId)).toBeUndefined();
    expect(await tokenStatus(server, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret })).toBe(401);
  });

  test('users: create, edit roles, set a password, disable (their password grant is refused) and enable (accepted)', async () => {
    await openSection(page, 'Users');
    await page
      .getByRole('cell', { name: 'bob' })
      .or(page.getByRole('rowheader', { name: 'bob' }))
      .first()
      .waitFor();
    await checkSection(page, 'users', width);
    await page.getByRole('button', { name: 'Create a user' }).click();
    await page.getByLabel('Username', { exact: true }).fill(carol);
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByRole('button', { name: 'Create user' }).click();
    await expect(page.locator('#user-form').getByRole('alert').textContent()).resolves.toMatch(/^Password: must be 8 to 1024 characters/);
    await page.getByLabel('Password', { exact: true }).fill('carol-password-1');
    await page.getByLabel('Email', { exact: true }).fill(`${carol}@example.com`);
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByText(`${carol} is created.`).waitFor();
    expect(await passwordGrant(carol, 'carol-password-1')).toBe(200);

    await page.getByLabel('Search users by name or email').fill(carol);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('button', { name: `Edit ${carol}` }).click();
    await page.getByLabel('Roles', { exact: true }).fill('auditor');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(`${carol} is saved.`).waitFor();
    await page.getByRole('row').filter({ hasText: 'auditor' }).waitFor();

    await page.getByRole('button', { name: `Set the password of ${carol}` }).click();
    await page.getByRole('dialog').getByLabel('New password').fill('carol-password-2');
    await page.getByRole('dialog').getByRole('button', { name: 'Set password' }).click();
    await page.getByText(`${carol} has a new password`).waitFor();
    expect(await passwordGrant(carol, 'carol-password-2')).toBe(200);

    await page.getByRole('button', { name: `Disable ${carol}` }).click();
    await page.getByText(`${carol} is disabled.`).waitFor();
    expect(await passwordGrant(carol, 'carol-password-2')).toBe(400);
    await page.getByRole('button', { name: `Enable ${carol}` }).click();
    await page.getByText(`${carol} is enabled.`).waitFor();
    expect(await passwordGrant(carol, 'carol-password-2')).toBe(200);

    await page.getByRole('button', { name: `Revoke the tokens of ${carol}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke tokens' }).click();
    await page.getByText(/^\d+ tokens? of carol/).waitFor();

    // A lost phone: carol has an authenticator app, the admin resets her second factors.
    const carolUser = (await server.ctx.users.page({ first: 1, search: carol })).edges[0]!.node;
    const enrolment = (await server.ctx.mfa.startTotp(carolUser))!;
    await server.ctx.mfa.confirmTotp(carolUser, codeAt(enrolment.secret, Date.now()));
    expect(await passwordGrant(carol, 'carol-password-2')).toBe(400); // mfa_required
    // A new search loads the list again, now with her factor.
    await page.getByLabel('Search users by name or email').fill(`${carol}@`);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('button', { name: `Reset the second factors of ${carol}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Reset second factors' }).click();
    await page.getByText(`${carol} has no second factor now`).waitFor();
    expect(await passwordGrant(carol, 'carol-password-2')).toBe(200);
  });

  test('the audit section shows those changes, filtered by kind, by client and by user', async () => {
    await openSection(page, 'Audit events');
    await page.getByRole('row').nth(1).waitFor();
    await page.getByLabel('Kind').fill('admin.change');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('kind') === 'admin.change');
    // The list stays on screen while the filtered one loads: wait for the filtered one.
    await page.waitForFunction(() => [...document.querySelectorAll('tbody th')].every((th) => th.textContent!.startsWith('admin.change')));
    await page
      .getByRole('rowheader', { name: /user\.set_password/ })
      .first()
      .waitFor();
    const text = await page.locator('table').textContent();
    for (const action of [
      'client.register',
      'client.update',
      'client.rotate_secret',
      'client.delete',
      'user.create',
      'user.update',
      'user.set_password',
      'tokens.revoke',
    ]) {
      expect(text).toContain(action);
    }
    await checkSection(page, 'audit', width);

    await page.getByLabel('Client ID').fill(clientId);
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('clientId') === clientId);
    await page.waitForFunction(() => [...document.querySelectorAll('tbody .action')].every((a) => a.textContent!.startsWith('client.')));
    const actions = await page.locator('tbody .action').allTextContents();
    expect(actions).toEqual(['client.delete', 'client.rotate_secret', 'client.update', 'client.register']);

    const userId = (await server.ctx.users.findByUsername('local', carol))!.id;
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.waitForURL((u) => u.search === '');
    await page.getByLabel('User ID').fill(userId);
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.has('userId'));
    await page.waitForFunction(() => [...document.querySelectorAll('tbody .action')].every((a) => !a.textContent!.startsWith('client.')));
    await page.getByRole('rowheader', { name: /user\.create/ }).waitFor();
    expect(await page.getByRole('rowheader', { name: /client\./ }).count()).toBe(0);
  });

  test('a list longer than a page: the pager counts the rows and steps through the pages both ways', async () => {
    const prefix = `pager-${width}-`;
    for (let i = 0; i < 23; i++) await server.user(`${prefix}${String(i).padStart(2, '0')}`, 'pager-password-1');
    await openSection(page, 'Users');
    await page.getByLabel('Search users by name or email').fill(prefix);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const pager = page.getByRole('navigation', { name: 'Users pages' });
    await pager.getByText('1–20 of 23').waitFor();
    expect(await pager.getByRole('button', { name: 'Previous page' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: `Edit ${prefix}19` }).waitFor();
    await pager.getByRole('button', { name: 'Next page' }).click();
    await pager.getByText('21–23 of 23').waitFor();
    await page.getByRole('button', { name: `Edit ${prefix}22` }).waitFor();
    expect(await page.getByRole('button', { name: `Edit ${prefix}00` }).count()).toBe(0);
    expect(await pager.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await pager.getByRole('button', { name: 'Previous page' }).click();
    await pager.getByText('1–20 of 23').waitFor();
    await page.getByRole('button', { name: `Edit ${prefix}00` }).waitFor();
  });

  test('identity backends with their state; signing keys, rotated', async () => {
    await openSection(page, 'Identity backends');
    const local = page.getByRole('row').filter({ hasText: 'database' });
    await expect(local.textContent()).resolves.toMatch(/local.*database.*up/);
    await checkSection(page, 'backends', width);

    await openSection(page, 'Signing keys');
    await page.getByRole('row').filter({ hasText: 'ES256' }).first().waitFor();
    const keysBefore = await page.locator('tbody tr').count();
    await page.getByRole('button', { name: 'Rotate keys' }).click();
    await page.getByRole('dialog').getByLabel('ES256').uncheck();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.getByText(/^New RS256 key \S+ signs from/).waitFor();
    // The notice comes before the list is read again: wait for the new row, then count.
    await page.locator('tbody tr').nth(keysBefore).waitFor();
    await expect(page.locator('tbody tr').count()).resolves.toBe(keysBefore + 1);
    await checkSection(page, 'keys', width);
  });

  test('nothing was asked of another origin, and no token was ever stored', () => {
    expectOnlyOwnOrigin(server, requests);
    expect(requests.some((u) => u.endsWith('/graphql'))).toBe(true);
  });

  test('a signed-in user without the admin role sees the refusal and nothing else', async () => {
    const other = await watchedContext(browser, width);
    try {
      await signIn(server, other.page, 'bob', 'bob-password-1');
      await other.page.getByRole('heading', { level: 1, name: 'Administrators only' }).waitFor();
      const main = await other.page.locator('main').textContent();
      expect(main).toContain('bob');
      expect(await other.page.getByRole('navigation').count()).toBe(0);
      expect(await other.page.locator('table').count()).toBe(0);
      // No data: the console saw the token had no admin scope and asked the API nothing.
      expect(other.requests.filter((u) => u.includes('/graphql'))).toEqual([]);
      expectOnlyOwnOrigin(server, other.requests);
      await checkSection(other.page, 'refusal', width);
    } finally {
      await other.context.close();
    }
  });
});

test('the access token is renewed with the refresh token, then by a silent round trip once the refresh token is revoked; sign-out ends the session', async () => {
  // Short-lived tokens for this test only, so that a renewal comes within seconds.
  await server.ctx.clients.update('admin-console', { accessTokenTtl: 6 }, CLI_ACTOR);
  const { context, page, requests } = await watchedContext(browser, 'desktop');
  try {
    const refreshed = page.waitForRequest(
      (r) => r.url().endsWith('/oauth/v20/token') && (r.postData() ?? '').includes('grant_type=refresh_token'),
      { timeout: 15_000 },
    );
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
    expect((await (await refreshed).response())!.status()).toBe(200);

    // The admin revokes their own tokens: the next request is refused, the refresh token too, and the
    // console comes back through the authorize endpoint with prompt=none, without a login page.
    await openSection(page, 'Users');
    await page.getByRole('button', { name: 'Revoke the tokens of admin' }).click();
    const silent = page.waitForRequest((r) => r.url().includes('/oauth/v20/authorize') && r.url().includes('prompt=none'), {
      timeout: 15_000,
    });
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke tokens' }).click();
    await openSection(page, 'Clients').catch(() => undefined);
    await silent;
    await page.waitForURL((u) => u.pathname.startsWith('/admin/') && !u.pathname.endsWith('/callback'));
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.getByText('Signed in as').waitFor();
    expect(
      requests.some(
        (u) =>
          u.includes('/oauth/v20/authorize') &&
          !u.includes('prompt=none') &&
          requests.indexOf(u) > requests.findIndex((x) => x.includes('prompt=none')),
      ),
    ).toBe(false);

    // Sign-out: RP-initiated logout with the id_token as hint (no question asked), back to the console's signed-out page.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Signed out' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/admin/signed-out');
    expect((await context.cookies(server.url)).find((c) => c.name === 'lk_sso')).toBeUndefined();
    await page.getByRole('button', { name: 'Sign in again' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expectOnlyOwnOrigin(server, requests);
  } finally {
    await context.close();
    await server.ctx.clients.update('admin-console', { accessTokenTtl: 900 }, CLI_ACTOR);
  }
});
