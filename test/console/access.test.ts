import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { BrowserContext, Page } from 'playwright-core';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { ADMIN_PASSWORD } from '../helpers/server.ts';
import { checkSection, consoleSuite, expectOnlyOwnOrigin, signIn, type Width } from './harness.ts';

/**
 * docs/access-and-claims.md in the console, at 1280 px and at 375 px: an application's page with its
 * Access tab (a group picked as one types, a user, saved through updateClient), Roles tab, Claims tab
 * (a claim mapping, a reserved name refused at its field) and, for a SAML SP, Attributes tab (the AWS
 * example); each tab's user picker shows the server's preview of what the application is told.
 */
const suite = consoleSuite();
const viewports: Record<Width, { width: number; height: number }> = {
  desktop: { width: 1280, height: 860 },
  phone: { width: 375, height: 740 },
};

let token: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  const { server } = suite;
  token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
  ids.alice = await server.user('alice', 'alice-password-1', {
    email: 'alice@example.com',
    groups: ['Engineering', 'aws-123456789012-Admin', 'aws-210987654321-ReadOnly', 'aws-not-an-account'],
  });
  ids.bob = await server.user('bob', 'bob-password-1', { groups: ['Sales'] });
  const answer = await graphqlPost(
    server,
    token,
    'mutation($id: ID!, $input: UpdateUserInput!) { updateUser(id: $id, input: $input) { id } }',
    {
      id: ids.alice,
      input: { attributes: { department: 'R&D', employeeNumber: 'E-42' } },
    },
  );
  expect(answer.errors).toBeUndefined();
});

/** The preview's verdict once it is there. */
const verdict = (page: Page, tab: string) => page.locator(`#${tab}-preview-result .verdict`);

/** Picks a user in a preview's picker by typing part of the name. */
async function previewFor(page: Page, tab: string, username: string): Promise<void> {
  const box = page.locator(`#${tab}-preview-user`);
  await box.fill(username.slice(0, 3));
  await page
    .locator(`#${tab}-preview-user-options`)
    .getByRole('option', { name: new RegExp(`^${username}`) })
    .click();
  await verdict(page, tab).filter({ hasText: username }).waitFor();
}

describe.each(['desktop', 'phone'] as const)('an application’s access and claims at %s width', (width) => {
  let context: BrowserContext;
  let page: Page;
  const requests: string[] = [];
  const wiki = `Wiki ${width}`;
  const aws = `AWS ${width}`;
  const awsEntity = `urn:amazon:webservices:${width}`;
  let clientId = '';

  beforeAll(async () => {
    const { server, browser } = suite;
    clientId = (await server.client({ name: wiki, redirectUris: ['https://wiki.example.com/callback'] })).clientId;
    const sp = await graphqlPost(
      server,
      token,
      'mutation($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId } }',
      { input: { entityId: awsEntity, name: aws, assertionConsumerServiceUrls: ['https://signin.aws.amazon.com/saml'] } },
    );
    expect(sp.errors).toBeUndefined();
    context = await browser.newContext({ viewport: viewports[width] });
    context.setDefaultTimeout(10_000);
    context.on('request', (r) => requests.push(r.url()));
    page = await context.newPage();
    page.on('pageerror', (err) => requests.push(`pageerror: ${err.message}`));
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Clients' }).waitFor();
  });
  afterAll(() => context?.close());

  test('Access: assign a group picked as one types and save; the preview lets a member in and says why, and refuses another', async () => {
    const { server } = suite;
    await page.getByRole('link', { name: `Access and claims of ${wiki}` }).click();
    await page.getByRole('heading', { level: 2, name: wiki }).waitFor();
    expect(new URL(page.url()).searchParams.get('app')).toBe(clientId);
    await expect(page.getByRole('tab', { name: 'Access' }).getAttribute('aria-selected')).resolves.toBe('true');

    await page.getByLabel('Only the groups, users and backends assigned below').check();
    const groups = page.getByRole('combobox', { name: 'Groups' });
    await groups.pressSequentially('engin');
    // The server's groups, searched as one types: the directory's name as it is, with its members.
    const option = page.locator('#access-groups-options').getByRole('option', { name: /^Engineering/ });
    await expect(option.textContent()).resolves.toContain('1 member');
    await option.click();
    await page.getByRole('list', { name: 'Groups: picked' }).getByText('Engineering').waitFor();
    // Typed and Enter: a group no user holds yet is taken as typed.
    await groups.fill('Contractors');
    await page
      .locator('#access-groups-options')
      .getByRole('option', { name: /^Contractors.*as typed/ })
      .waitFor();
    await groups.press('ArrowDown');
    await groups.press('Enter');
    await page.getByRole('button', { name: 'Remove Contractors' }).click();
    await checkSection(page, 'access-tab-picking', width);

    await page.getByRole('button', { name: 'Save access' }).click();
    await page.getByText(`Access to ${wiki} is saved.`).waitFor();
    expect((await server.ctx.clients.find(clientId))!.access).toEqual({
      mode: 'assigned',
      groups: ['Engineering'],
      users: [],
      backends: [],
    });

    await previewFor(page, 'access', 'alice');
    await expect(verdict(page, 'access').textContent()).resolves.toBe(`alice may use ${wiki}: a member of the group Engineering.`);
    await previewFor(page, 'access', 'bob');
    await expect(verdict(page, 'access').textContent()).resolves.toMatch(new RegExp(`^bob may not use ${wiki}: not assigned`));
    await checkSection(page, 'access-tab', width);

    // bob named by user: the preview follows the save.
    await page.getByRole('combobox', { name: 'Users' }).fill('bo');
    await page.locator('#access-users-options').getByRole('option', { name: /^bob/ }).click();
    await page.getByRole('button', { name: 'Save access' }).click();
    await verdict(page, 'access').filter({ hasText: 'bob may use' }).waitFor();
    await expect(verdict(page, 'access').textContent()).resolves.toBe(`bob may use ${wiki}: the user is assigned by name.`);
    expect((await server.ctx.clients.find(clientId))!.access.users).toEqual([ids.bob]);
    // Loaded again, the page shows the user by name.
    await page.reload();
    await page.getByRole('list', { name: 'Users: picked' }).getByText('bob').waitFor();
  });

  test('Roles and Claims: a role from a group, a claim from an attribute; a reserved name is refused at its field; the preview shows the tokens', async () => {
    const { server } = suite;
    await page.getByRole('tab', { name: 'Roles' }).click();
    await page.getByRole('button', { name: 'Add a role' }).click();
    const role = page.getByRole('group', { name: /^Role 1/ });
    await role.getByLabel('Role name').fill('editor');
    await role.getByRole('combobox', { name: 'Groups holding it' }).fill('Eng');
    await page
      .locator('#role-0-groups-options')
      .getByRole('option', { name: /^Engineering/ })
      .click();
    await page.getByRole('button', { name: 'Save roles' }).click();
    await page.getByText(`The roles of ${wiki} are saved.`).waitFor();
    expect((await server.ctx.clients.find(clientId))!.appRoles).toEqual([{ name: 'editor', groups: ['Engineering'], users: [] }]);
    await checkSection(page, 'roles-tab', width);

    await page.getByRole('tab', { name: 'Claims' }).click();
    await page.getByRole('button', { name: 'Add a claim' }).click();
    const first = page.getByRole('group', { name: /^Claim 1/ });
    await first.getByLabel('Claim name').fill('department');
    await first.getByLabel('Source').selectOption('ATTRIBUTE');
    await first.getByLabel('Attribute', { exact: true }).fill('department');
    await first.getByLabel('JWT access token').check();
    await page.getByRole('button', { name: 'Add a claim' }).click();
    const second = page.getByRole('group', { name: /^Claim 2/ });
    await second.getByLabel('Claim name').fill('sub');
    await second.getByLabel('Source').selectOption('STATIC');
    await second.getByLabel('Value', { exact: true }).fill('someone-else');
    await page.getByRole('button', { name: 'Save claims' }).click();
    await expect(page.locator('#claims-form').getByRole('alert').textContent()).resolves.toMatch(/^Claim 2: claim name: .*reserved/);
    await expect(second.getByLabel('Claim name').getAttribute('aria-invalid')).resolves.toBe('true');
    await checkSection(page, 'claims-tab-error', width);
    await page.getByRole('button', { name: 'Remove claim 2' }).click();
    await page.getByRole('button', { name: 'Save claims' }).click();
    await page.getByText(`The claims of ${wiki} are saved.`).waitFor();
    expect((await server.ctx.clients.find(clientId))!.claimMappings).toEqual([
      {
        claim: 'department',
        source: 'attribute',
        attribute: 'department',
        value: null,
        groupFilter: null,
        multiValued: false,
        scope: null,
        targets: ['id_token', 'userinfo', 'access_token'],
      },
    ]);

    await previewFor(page, 'claims', 'alice');
    const claims = async (block: string) =>
      JSON.parse((await page.locator(`#claims-preview-${block}`).locator('xpath=..').locator('pre').textContent())!);
    const idToken = await claims('id-token');
    expect(idToken).toMatchObject({ sub: ids.alice, department: 'R&D', roles: ['editor'] });
    expect(await claims('userinfo')).toMatchObject({ sub: ids.alice, department: 'R&D', roles: ['editor'] });
    expect(await claims('access-token')).toMatchObject({ department: 'R&D', roles: ['editor'] });
    await checkSection(page, 'claims-tab', width);
    expectOnlyOwnOrigin(server, requests);
  });

  test('a SAML application’s Attributes tab: the AWS example, a NameID from an attribute, and the preview of the assertion', async () => {
    const { server } = suite;
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'SAML applications' }).click();
    await page.getByRole('link', { name: `Access and attributes of ${aws}` }).click();
    await page.getByRole('heading', { level: 2, name: aws }).waitFor();
    await page.getByRole('tab', { name: 'Attributes' }).click();
    await page.getByLabel('Only the attributes mapped below').check();
    await page.getByRole('button', { name: 'Add the AWS example' }).click();
    await page.getByLabel('NameID format').selectOption('UNSPECIFIED');
    await page.getByLabel('NameID attribute').fill('employeeNumber');
    await page.getByRole('button', { name: 'Save attributes' }).click();
    await page.getByText(`The attributes of ${aws} are saved.`).waitFor();
    const stored = (await server.ctx.samlProviders.find(awsEntity))!;
    expect(stored.nameIdFormat).toBe('unspecified');
    expect(stored.nameIdAttribute).toBe('employeeNumber');
    expect(stored.attributeMappings).toEqual([
      {
        name: 'https://aws.amazon.com/SAML/Attributes/Role',
        nameFormat: 'uri',
        friendlyName: null,
        source: 'groups',
        attribute: null,
        groupFilter: '^aws-(\\d{12})-(\\w+)$',
        value: 'arn:aws:iam::$1:role/$2,arn:aws:iam::$1:saml-provider/Latchkey',
        multiValued: true,
      },
      {
        name: 'https://aws.amazon.com/SAML/Attributes/RoleSessionName',
        nameFormat: 'uri',
        friendlyName: null,
        source: 'username',
        attribute: null,
        groupFilter: null,
        value: null,
        multiValued: false,
      },
    ]);

    await previewFor(page, 'attributes', 'alice');
    await expect(verdict(page, 'attributes').textContent()).resolves.toBe(
      `alice may use ${aws}: the application is open to everyone who can sign in.`,
    );
    await expect(page.locator('#attributes-preview-name-id').textContent()).resolves.toBe('E-42');
    const attributes = await page
      .locator('#attributes-preview-result table tbody tr')
      .evaluateAll((rows) =>
        rows.map((r) => [r.querySelector('th code')!.textContent, [...r.querySelectorAll('td li')].map((li) => li.textContent)]),
      );
    expect(attributes).toEqual([
      [
        'https://aws.amazon.com/SAML/Attributes/Role',
        [
          'arn:aws:iam::123456789012:role/Admin,arn:aws:iam::123456789012:saml-provider/Latchkey',
          'arn:aws:iam::210987654321:role/ReadOnly,arn:aws:iam::210987654321:saml-provider/Latchkey',
        ],
      ],
      ['https://aws.amazon.com/SAML/Attributes/RoleSessionName', ['alice']],
    ]);
    await checkSection(page, 'attributes-tab', width);

    // The Access tab of an SP saves through updateSamlServiceProvider; its preview is the same picker's.
    await page.getByRole('tab', { name: 'Access' }).click();
    await page.getByLabel('Only the groups, users and backends assigned below').check();
    await page.getByLabel('local').check();
    await page.getByRole('button', { name: 'Save access' }).click();
    await page.getByText(`Access to ${aws} is saved.`).waitFor();
    expect((await server.ctx.samlProviders.find(awsEntity))!.access).toEqual({
      mode: 'assigned',
      groups: [],
      users: [],
      backends: ['local'],
    });
    await verdict(page, 'access').filter({ hasText: 'a user of the backend local' }).waitFor();
    await checkSection(page, 'saml-access-tab', width);
    expectOnlyOwnOrigin(server, requests);
  });

  test('the client form sets the login initiation URL; the application’s page shows its My applications link', async () => {
    const { server } = suite;
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Clients' }).click();
    await page.getByRole('button', { name: `Edit ${wiki}` }).click();
    await page.locator('#client-form summary', { hasText: 'Advanced' }).click();
    await page.getByLabel('Login initiation URL').fill('https://wiki.example.com/login');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(`${wiki} is saved.`).waitFor();
    expect((await server.ctx.clients.find(clientId))!.initiateLoginUri).toBe('https://wiki.example.com/login');
    await page.getByRole('link', { name: `Access and claims of ${wiki}` }).click();
    const launch = new URL('https://wiki.example.com/login');
    launch.searchParams.set('iss', server.url);
    await expect(page.locator('#app-launch-url').textContent()).resolves.toBe(launch.href);
    // The access set on the Access tab is still there: the client form leaves it alone.
    expect((await server.ctx.clients.find(clientId))!.access.groups).toEqual(['Engineering']);
  });
});
