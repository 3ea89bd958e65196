import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { buildConsoleIfStale, checkSection, expectOnlyOwnOrigin, launch, signIn, watchedContext, type Width } from '../console/harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * docs/webhooks.md in the admin console: the Webhooks section registers an endpoint (the signing secret
 * shown once, with a copy button and the warning) that then receives signed events, lists each
 * delivery, and deletes the endpoint after a confirmation.
 */
let server: TestServer;
let browser: Browser;
let app: { clientId: string; clientSecret: string | null };

beforeAll(async () => {
  buildConsoleIfStale();
  [server, browser] = await Promise.all([startTestServer('sqlite', { webhooks: { pollInterval: 100 } }), launch()]);
  app = await server.client({ grantTypes: ['password'], scopes: ['openid'] });
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe.each(['desktop', 'phone'] as const)('webhooks in the console at %s width', (width: Width) => {
  let page: Page;
  let requests: string[];
  let close: () => Promise<void>;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    const watched = await watchedContext(browser, width);
    ({ page, requests } = watched);
    close = () => watched.context.close();
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
  });
  afterAll(async () => {
    await close();
    await receiver.close();
  });

  test('register: the secret shown once; deliveries listed; delete', async () => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    await checkSection(page, 'webhooks', width);

    // A URL Latchkey never calls is refused, naming the field.
    await page.getByRole('button', { name: 'Register webhook' }).click();
    await page.getByLabel('URL').fill('http://169.254.169.254/latest/meta-data');
    await page.getByRole('button', { name: 'Register webhook' }).last().click();
    await expect(page.getByRole('alert').first().textContent()).resolves.toContain('link-local');

    await page.getByLabel('URL').fill(receiver.url);
    await page.getByLabel('Events').fill('login.failure');
    await page.getByLabel('Description').fill(`Receiver at ${width}`);
    await page.getByRole('button', { name: 'Register webhook' }).last().click();
    const shown = page.locator('#new-webhook-secret');
    await shown.waitFor();
    const secret = (await shown.textContent())!;
    expect(secret).toMatch(/^whsec_/);
    await expect(page.getByRole('alert').first().textContent()).resolves.toContain('it is shown only this once');
    await page.getByRole('button', { name: 'Copy the signing secret' }).waitFor();
    await checkSection(page, 'webhooks-registered', width);
    receiver.secret = secret;

    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.locator('#new-webhook-secret').count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toContain(secret);

    // A failed sign-in: the endpoint receives it, signed, and the delivery is listed.
    const failed = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username: `nobody-${width}`, password: 'wrong-password-1' },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );
    expect(failed.status).toBe(400);
    await page.getByRole('button', { name: `Deliveries to Receiver at ${width}` }).click();
    const deliveries = page.getByRole('table', { name: `Deliveries to Receiver at ${width}` });
    await eventually('the delivery is listed', async () => {
      if ((await deliveries.count()) > 0 && (await deliveries.textContent())?.includes('Delivered')) return true;
      await page.getByRole('button', { name: 'Refresh' }).click();
      return false;
    });
    expect(receiver.kinds()).toEqual(['login.failure']);
    await expect(deliveries.textContent()).resolves.toContain('HTTP 200');
    await checkSection(page, 'webhooks-deliveries', width);

    await page.getByRole('button', { name: `Delete Receiver at ${width}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete webhook' }).click();
    await page.getByText(`Receiver at ${width} is deleted`).waitFor();
    await page
      .getByRole('row')
      .filter({ hasText: `Receiver at ${width}` })
      .waitFor({ state: 'detached' });
    expect(await server.sql('webhooks').count({ n: '*' })).toEqual([{ n: 0 }]);
    expectOnlyOwnOrigin(server, requests);
  });
});
