import { expect, test } from '@jest/globals';
import { ADMIN_PASSWORD } from '../helpers/server.ts';
import { consoleSuite, checkSection, expectOnlyOwnOrigin, signIn, watchedContext } from './harness.ts';

/** The client form's "Advanced" section, at phone width: web origins and a back-channel logout URI, stored and shown again. */
const suite = consoleSuite();

test('register a client with web origins and a back-channel logout URI; a bad origin shows the API error at the form', async () => {
  const { server, browser } = suite;
  const { context, page, requests } = await watchedContext(browser, 'phone');
  try {
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
    await page.getByRole('button', { name: 'Register a client' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Notes SPA');
    await page.getByLabel('Redirect URIs', { exact: true }).fill('https://notes.example.com/callback');
    // Folded away by default.
    expect(await page.getByLabel('Web origins').isVisible()).toBe(false);
    await page.locator('#client-form summary', { hasText: 'Advanced' }).click();
    await page.getByLabel('Web origins').fill('https://notes.example.com/app');
    await page.getByLabel('Back-channel logout URI').fill('https://notes.example.com/backchannel-logout');
    await page.getByRole('button', { name: 'Register client' }).click();
    const form = page.locator('#client-form');
    await expect(form.getByRole('alert').textContent()).resolves.toMatch(/^Web origins: .*is not an origin/);
    await expect(page.getByLabel('Web origins').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(form.locator('#client-web-origins-error').textContent()).resolves.toContain('did you mean https://notes.example.com?');
    await checkSection(page, 'client-form-advanced-error', 'phone');

    await page.getByLabel('Web origins').fill('https://notes.example.com\nhttps://notes-app.example.com');
    await page.getByRole('button', { name: 'Register client' }).click();
    await page.getByRole('heading', { name: 'The secret of Notes SPA' }).waitFor();
    const clientId = (await page.locator('#new-client-id').textContent())!;
    const stored = (await server.ctx.clients.find(clientId))!;
    expect(stored.webOrigins).toEqual(['https://notes.example.com', 'https://notes-app.example.com']);
    expect(stored.backchannelLogoutUri).toBe('https://notes.example.com/backchannel-logout');
    await page.getByRole('button', { name: 'I have stored it' }).click();

    // The edit form shows them again; an untouched save keeps them.
    await page.getByRole('button', { name: 'Edit Notes SPA' }).click();
    await page.locator('#client-form summary', { hasText: 'Advanced' }).click();
    await expect(page.getByLabel('Web origins').inputValue()).resolves.toBe('https://notes.example.com\nhttps://notes-app.example.com');
    await expect(page.getByLabel('Back-channel logout URI').inputValue()).resolves.toBe('https://notes.example.com/backchannel-logout');
    await checkSection(page, 'client-form-advanced', 'phone');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Notes SPA is saved.').waitFor();
    const after = (await server.ctx.clients.find(clientId))!;
    expect(after.webOrigins).toEqual(['https://notes.example.com', 'https://notes-app.example.com']);
    expect(after.backchannelLogoutUri).toBe('https://notes.example.com/backchannel-logout');
    expectOnlyOwnOrigin(server, requests);
  } finally {
    await context.close();
  }
});
