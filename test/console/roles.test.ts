import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { BUILT_IN_ROLES, PERMISSIONS } from '../../console/src/auth/catalogue.ts';
import * as model from '../../src/admin-roles/model.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { eventually } from '../helpers/eventually.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { MailServer } from '../password-reset/harness.ts';
import { buildConsoleIfStale, checkSection, expectOnlyOwnOrigin, launch, signIn, tokenStatus, watchedContext } from './harness.ts';

/**
 * docs/admin-console.md "What each role sees": the console shows only what the signed-in admin may do.
 * In Debian's Chromium, each built-in role (and a custom one) signs in and finds the sections and
 * buttons its permissions open and no other, and one thing it may do works: the helpdesk mails a
 * reset and disables a user, the auditor reads that in the audit trail, an application owner changes
 * its own client's redirect URI, a custom role rotates the keys, the admin makes a role.
 */
let server: TestServer;
let browser: Browser;
let mail: MailServer;
let token: string;
const ids: Record<string, string> = {};
const clients: Record<string, string> = {};

const PASSWORD = 'role-password-1';
const ALL_SECTIONS = [
  'Clients',
  'SAML applications',
  'Users',
  'Audit events',
  'Identity backends',
  'Signing keys',
  'SCIM tokens',
  'Webhooks',
  'Admin roles',
];

async function admin(query: string, variables?: Record<string, unknown>): Promise<Record<string, unknown>> {
  const answer = await graphqlPost(server, token, query, variables);
  expect(answer.errors).toBeUndefined();
  return answer.data!;
}

beforeAll(async () => {
  buildConsoleIfStale();
  mail = await MailServer.start();
  [server, browser] = await Promise.all([
    startTestServer('sqlite', {
      passwordReset: { enabled: true },
      smtp: { url: mail.url, from: 'Latchkey <sso@example.com>' },
    }),
    launch(),
  ]);
  token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
  ids.hilda = await server.user('hilda', PASSWORD, { roles: ['helpdesk'] });
  ids.audrey = await server.user('audrey', PASSWORD, { roles: ['auditor'] });
  ids.owen = await server.user('owen', PASSWORD, { roles: ['app-owner'] });
  ids.kim = await server.user('kim', PASSWORD, { roles: ['keykeeper'] });
  ids.carol = await server.user('carol', 'carol-password-1', { email: 'carol@example.com' });
  await admin(
    'mutation { createAdminRole(name: "keykeeper", permissions: ["backends:read", "keys:manage"], description: "Keys") { name } }',
  );
  const register = async (name: string, owners: string[]) => {
    const data = await admin('mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId } } }', {
      input: { name, redirectUris: [`https://${name.toLowerCase().replace(/ /g, '-')}.example.com/callback`], owners },
    });
    return (data.registerClient as { client: { clientId: string } }).client.clientId;
  };
  clients.owned = await register('Owned wiki', [ids.owen!]);
  clients.other = await register('Other wiki', []);
  for (const [entityId, owners] of [
    ['urn:example:owned-sp', [ids.owen]],
    ['urn:example:other-sp', []],
  ] as const) {
    await admin('mutation($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId } }', {
      input: {
        entityId,
        name: entityId.slice(12),
        assertionConsumerServiceUrls: [`https://${entityId.slice(12)}.example.com/acs`],
        owners,
      },
    });
  }
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await mail?.close();
});

/** Signs `username` in to the console in a fresh desktop context, runs `walk`, then checks nothing left the origin. */
async function as(username: string, password: string, walk: (page: Page) => Promise<void>): Promise<void> {
  const { context, page, requests } = await watchedContext(browser, 'desktop');
  try {
    await signIn(server, page, username, password);
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    await walk(page);
    expectOnlyOwnOrigin(server, requests);
  } finally {
    await context.close();
  }
}

const sections = (page: Page) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents();

async function open(page: Page, title: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: title }).click();
  await page.getByRole('heading', { level: 1, name: title }).waitFor();
}

/** A list's row, by the name in its row header. */
const row = (page: Page, name: string) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });

/** The names of the buttons and links of a row (its accessible names). */
async function controls(page: Page, name: string): Promise<string[]> {
  const r = row(page, name);
  await r.waitFor();
  const names = await r.locator('button, a').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? e.textContent ?? ''));
  return names.sort();
}

test('the console’s copy of the permissions and the built-in roles is the server’s', () => {
  expect([...PERMISSIONS]).toEqual([...model.PERMISSIONS]);
  expect(Object.fromEntries(model.BUILT_IN_ROLES.map((r) => [r.name, r.permissions]))).toEqual(
    Object.fromEntries(Object.entries(BUILT_IN_ROLES).map(([name, ps]) => [name, [...ps]])),
  );
});

describe('each role sees what it may do, and nothing else', () => {
  test('helpdesk: Users alone; credentials, MFA, enable and sessions of a user, nothing on an admin; a reset mailed and a user disabled', async () => {
    await as('hilda', PASSWORD, async (page) => {
      // Landed on Users: the console's default section (Clients) is not theirs.
      await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
      expect(await sections(page)).toEqual(['Users']);
      expect(await controls(page, 'carol')).toEqual([
        'Disable carol',
        'Revoke the tokens of carol',
        'Send carol a password reset',
        'Set the password of carol',
      ]);
      // Nothing that needs users:write (create, edit), roles:manage or audit:read.
      expect(await page.getByRole('button', { name: 'Create a user' }).count()).toBe(0);
      // The admin's roles give what the helpdesk lacks: the API lets nobody act on them, so nothing is offered.
      expect(await controls(page, 'admin')).toEqual([]);
      await checkSection(page, 'roles-helpdesk-users', 'desktop');

      // A section it may not read, asked for by its address: the console goes to one it may.
      await page.goto(`${server.url}/admin/clients`);
      await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/admin/users');

      await page.getByRole('button', { name: 'Send carol a password reset' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Send reset mail' }).click();
      await page.getByText('A password reset is on its way to carol.').waitFor();
      await eventually('the reset mail reaches carol', async () => mail.mails.some((m) => m.to === 'carol@example.com'));
      expect(mail.mails.find((m) => m.to === 'carol@example.com')!.text).toContain(`${server.url}/`);

      await page.getByRole('button', { name: 'Disable carol' }).click();
      await page.getByText('carol is disabled.').waitFor();
      expect(
        await tokenStatus(server, { grant_type: 'password', client_id: 'admin-cli', username: 'carol', password: 'carol-password-1' }),
      ).not.toBe(200);
      await page.getByRole('button', { name: 'Enable carol' }).click();
      await page.getByText('carol is enabled.').waitFor();
    });
  });

  test('auditor: every section but webhooks and roles, read only, no secret; reads the helpdesk’s acts in the audit trail', async () => {
    await as('audrey', PASSWORD, async (page) => {
      await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
      // Webhooks take webhooks:manage, which the auditor has not.
      expect(await sections(page)).toEqual(ALL_SECTIONS.filter((s) => s !== 'Admin roles' && s !== 'Webhooks'));
      expect(await page.getByRole('button', { name: 'Register a client' }).count()).toBe(0);
      expect(await controls(page, 'Owned wiki')).toEqual(['Access and claims of Owned wiki', 'Audit events of Owned wiki']);

      // An application's page: its settings shown, nothing to save.
      await page.getByRole('link', { name: 'Access and claims of Owned wiki' }).click();
      await page.getByRole('heading', { level: 2, name: 'Owned wiki' }).waitFor();
      await expect(page.getByLabel('Everyone who can sign in').isDisabled()).resolves.toBe(true);
      expect(await page.getByRole('button', { name: 'Save access' }).count()).toBe(0);
      await page.getByRole('tab', { name: 'Claims' }).click();
      await expect(page.getByRole('button', { name: 'Add a claim' }).isDisabled()).resolves.toBe(true);
      expect(await page.getByRole('button', { name: 'Save claims' }).count()).toBe(0);
      await checkSection(page, 'roles-auditor-application', 'desktop');

      await open(page, 'SAML applications');
      expect(await page.getByRole('button', { name: /^(Register|Edit|Delete)/ }).count()).toBe(0);
      await open(page, 'Users');
      expect(await controls(page, 'carol')).toEqual(['Audit events of carol']);
      expect(await page.getByRole('button', { name: 'Create a user' }).count()).toBe(0);
      await open(page, 'Signing keys');
      await page.getByRole('table', { name: 'Signing keys' }).waitFor();
      expect(await page.getByRole('button', { name: 'Rotate keys' }).count()).toBe(0);
      await open(page, 'SCIM tokens');
      expect(await page.getByRole('button', { name: 'New SCIM token' }).count()).toBe(0);

      // The helpdesk's disabling of carol, with the role and permission it was done under.
      await open(page, 'Audit events');
      await page.getByLabel('User ID').fill(ids.carol!);
      await page.getByLabel('Kind').fill('admin.change');
      await page.getByRole('button', { name: 'Filter', exact: true }).click();
      await page.getByText('as helpdesk (users:enable)').first().waitFor();
      await checkSection(page, 'roles-auditor-audit', 'desktop');
    });
  });

  test('app-owner: its own applications only, no register or delete; changes its client’s redirect URI', async () => {
    await as('owen', PASSWORD, async (page) => {
      await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
      expect(await sections(page)).toEqual(['Clients', 'SAML applications']);
      await row(page, 'Owned wiki').waitFor();
      expect(await page.getByRole('rowheader').allTextContents()).toEqual(['Owned wiki']);
      expect(await page.getByRole('button', { name: 'Register a client' }).count()).toBe(0);
      expect(await controls(page, 'Owned wiki')).toEqual([
        'Access and claims of Owned wiki',
        'Edit Owned wiki',
        'Rotate the secret of Owned wiki',
      ]);

      await page.getByRole('button', { name: 'Edit Owned wiki' }).click();
      const form = page.locator('#client-form');
      // Only what an owner may change: no name, grants, roles or owners.
      expect(await form.getByLabel('Name', { exact: true }).count()).toBe(0);
      expect(await form.getByRole('combobox', { name: 'Owners' }).count()).toBe(0);
      await form.getByLabel('Redirect URIs', { exact: true }).fill('https://wiki.example.org/callback');
      await checkSection(page, 'roles-app-owner-edit', 'desktop');
      await form.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText('Owned wiki is saved.').waitFor();
      expect((await server.ctx.clients.find(clients.owned!))!.redirectUris).toEqual(['https://wiki.example.org/callback']);

      // Its access page: it saves, but has no preview (that reads users, which it may not).
      await page.getByRole('link', { name: 'Access and claims of Owned wiki' }).click();
      await page.getByRole('button', { name: 'Save access' }).waitFor();
      expect(await page.getByRole('heading', { name: 'Preview' }).count()).toBe(0);

      await open(page, 'SAML applications');
      await row(page, 'owned-sp').waitFor();
      expect(await page.getByRole('rowheader').allTextContents()).toEqual(['owned-sp']);
      expect(await controls(page, 'owned-sp')).toEqual(['Access and attributes of owned-sp', 'Edit owned-sp']);
      expect(await page.getByRole('button', { name: 'Register a SAML application' }).count()).toBe(0);
    });
  });

  test('a custom role (backends:read, keys:manage): backends, keys and SCIM tokens; rotates the keys', async () => {
    await as('kim', PASSWORD, async (page) => {
      await page.getByRole('heading', { level: 1, name: 'Identity backends' }).waitFor();
      expect(await sections(page)).toEqual(['Identity backends', 'Signing keys', 'SCIM tokens']);
      await open(page, 'Signing keys');
      await page.getByRole('button', { name: 'Rotate keys' }).click();
      await page.getByRole('dialog').getByLabel('ES256').uncheck();
      await page.getByRole('dialog').getByRole('button', { name: 'Rotate', exact: true }).click();
      await page.getByText(/^New RS256 key \S+ signs from/).waitFor();
    });
  });

  test('admin: every section; makes a custom role, which the API then has', async () => {
    await as('admin', ADMIN_PASSWORD, async (page) => {
      await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
      expect(await sections(page)).toEqual(ALL_SECTIONS);
      expect(await controls(page, 'Other wiki')).toEqual([
        'Access and claims of Other wiki',
        'Audit events of Other wiki',
        'Delete Other wiki',
        'Edit Other wiki',
        'Rotate the secret of Other wiki',
      ]);
      await open(page, 'Admin roles');
      expect(await controls(page, 'helpdesk')).toEqual([]);
      expect(await controls(page, 'keykeeper')).toEqual(['Delete the role keykeeper', 'Edit the role keykeeper']);
      await page.getByRole('button', { name: 'Create an admin role' }).click();
      const form = page.locator('#role-form');
      await form.getByLabel('Name', { exact: true }).fill('readers');
      await form.getByLabel('Description').fill('Reads users and the audit log');
      await form.getByLabel(/^users:read/).check();
      await form.getByLabel(/^audit:read/).check();
      await checkSection(page, 'roles-admin-roles-form', 'desktop');
      await form.getByRole('button', { name: 'Create role' }).click();
      await page.getByText('The role readers is created.').waitFor();
      await row(page, 'readers').waitFor();
      const roles = (await admin('{ adminRoles { name permissions } }')).adminRoles as Array<{ name: string; permissions: string[] }>;
      expect(roles.find((r) => r.name === 'readers')?.permissions).toEqual(['users:read', 'audit:read']);
      await checkSection(page, 'roles-admin-roles', 'desktop');
    });
  });
});
