import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, type GraphQLAnswer, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * docs/access-and-claims.md: an application's access policy, roles and mappings as an admin registers
 * and changes them through GraphQL, with every mistake refused naming its field.
 */
const CLIENT = `clientId access { mode groups users backends } applicationRoles { name groups users }
  claimMappings { claim source attribute value groupFilter multiValued scope targets } initiateLoginUri launchUrl`;
const SP = `entityId access { mode groups } roles { name groups } rolesAttribute nameIdFormat nameIdAttribute launchUrl
  attributeMappings { name nameFormat friendlyName source groupFilter value multiValued }`;

describe.each(databaseKinds)('access and release fields of applications on %s', (kind) => {
  let server: TestServer;
  let admin: string;

  beforeAll(async () => {
    server = await startTestServer(kind);
    admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
  });
  afterAll(() => server.stop());

  const gql = (query: string, variables: Record<string, unknown>) => graphqlPost(server, admin, query, variables);
  const register = (input: Record<string, unknown>) =>
    gql(`mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { ${CLIENT} } } }`, {
      i: { name: 'Ledger', redirectUris: ['https://ledger.example/cb'], ...input },
    });
  const refused = (answer: GraphQLAnswer, field: string, words: RegExp) => {
    expect(answer.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
    expect(answer.errors?.[0]?.message).toMatch(words);
  };

  test('a client keeps its policy, roles, mappings and launch URL, with the defaults filled in', async () => {
    const answer = await register({
      access: { mode: 'ASSIGNED', groups: ['cn=finance,ou=groups,dc=example,dc=org'], users: [], backends: ['corp'] },
      applicationRoles: [{ name: 'approver', groups: ['finance'] }],
      claimMappings: [
        { claim: 'department', source: 'ATTRIBUTE', attribute: 'department' },
        { claim: 'teams', source: 'GROUPS', groupFilter: '^team-(.+)$', targets: ['ID_TOKEN', 'ACCESS_TOKEN'], scope: 'profile' },
      ],
      initiateLoginUri: 'https://ledger.example/login',
    });
    expect(answer.errors).toBeUndefined();
    const client = (answer.data!.registerClient as { client: Record<string, unknown> }).client;
    expect(client).toMatchObject({
      access: { mode: 'ASSIGNED', groups: ['cn=finance,ou=groups,dc=example,dc=org'], users: [], backends: ['corp'] },
      applicationRoles: [{ name: 'approver', groups: ['finance'], users: [] }],
      claimMappings: [
        {
          claim: 'department',
          source: 'ATTRIBUTE',
          attribute: 'department',
          multiValued: false,
          scope: null,
          targets: ['ID_TOKEN', 'USERINFO'],
        },
        {
          claim: 'teams',
          source: 'GROUPS',
          groupFilter: '^team-(.+)$',
          multiValued: true,
          scope: 'profile',
          targets: ['ID_TOKEN', 'ACCESS_TOKEN'],
        },
      ],
      initiateLoginUri: 'https://ledger.example/login',
      launchUrl: `https://ledger.example/login?iss=${encodeURIComponent(server.url)}`,
    });

    // Read back as stored, and null puts each back to its default.
    const read = await gql(`query($c: ID!) { client(clientId: $c) { ${CLIENT} } }`, { c: client.clientId });
    expect(read.data!.client).toEqual(client);
    const cleared = await gql(`mutation($c: ID!, $i: UpdateClientInput!) { updateClient(clientId: $c, input: $i) { ${CLIENT} } }`, {
      c: client.clientId,
      i: { access: null, applicationRoles: null, claimMappings: null, initiateLoginUri: null },
    });
    expect(cleared.errors).toBeUndefined();
    expect(cleared.data!.updateClient).toMatchObject({
      access: { mode: 'EVERYONE', groups: [], users: [], backends: [] },
      applicationRoles: [],
      claimMappings: [],
      initiateLoginUri: null,
      launchUrl: null,
    });
  });

  test.each([
    ['sub', 'claimMappings.0.claim', /reserved/],
    ['auth_time', 'claimMappings.0.claim', /reserved/],
    ['client_id', 'claimMappings.0.claim', /reserved/],
    ['email_verified', 'claimMappings.0.claim', /reserved/],
    ['active', 'claimMappings.0.claim', /reserved/],
    ['nbf', 'claimMappings.0.claim', /reserved/],
  ])('a mapping of the reserved claim %s is refused', async (claim, field, words) => {
    refused(await register({ claimMappings: [{ claim, source: 'STATIC', value: 'x' }] }), field, words);
  });

  test('each other mistake is refused with its field', async () => {
    refused(
      await register({ claimMappings: [{ claim: 'g', source: 'GROUPS', groupFilter: '^(unclosed' }] }),
      'claimMappings.0.groupFilter',
      /regular expression/,
    );
    refused(await register({ claimMappings: [{ claim: 'd', source: 'ATTRIBUTE' }] }), 'claimMappings.0.attribute', /needed/);
    refused(await register({ claimMappings: [{ claim: 's', source: 'STATIC' }] }), 'claimMappings.0.value', /needed/);
    refused(
      await register({
        claimMappings: [
          { claim: 'x', source: 'USERNAME' },
          { claim: 'x', source: 'EMAIL' },
        ],
      }),
      'claimMappings.1.claim',
      /twice/,
    );
    refused(await register({ applicationRoles: [{ name: 'a' }, { name: 'a' }] }), 'applicationRoles.1.name', /twice/);
    refused(await register({ applicationRoles: [{ name: '' }] }), 'applicationRoles.0.name', /1 to 128/);
    refused(await register({ initiateLoginUri: 'javascript:alert(1)' }), 'initiateLoginUri', /http or https/);
    refused(await register({ access: { mode: 'ASSIGNED', groups: ['bad\nname'] } }), 'access.groups', /control characters/);
    refused(await register({ claimMappings: [{ claim: 'two words', source: 'USERNAME' }] }), 'claimMappings.0.claim', /printable/);
    refused(
      await register({ claimMappings: [{ claim: 'g', source: 'GROUPS', groupFilter: '^(\\w+\\s?)*$' }] }),
      'claimMappings.0.groupFilter',
      /could take exponential time/,
    );
    refused(
      await register({ claimMappings: [{ claim: 'g', source: 'GROUPS', groupFilter: '^team-(\\w+)$', value: '$1-$2' }] }),
      'claimMappings.0.value',
      /\$2 but the group filter has one capture group/,
    );
    refused(
      await register({
        claimMappings: [
          { claim: 'x', source: 'USERNAME' },
          { claim: 'x', source: 'EMAIL', scope: 'email' },
        ],
      }),
      'claimMappings.1.scope',
      /both with and without a scope/,
    );
  });

  test('EVERYONE drops the lists given with it, as stored and read back', async () => {
    const answer = await register({ access: { mode: 'EVERYONE', groups: ['staff'], users: [], backends: ['corp'] } });
    expect(answer.errors).toBeUndefined();
    const client = (answer.data!.registerClient as { client: { clientId: string; access: unknown } }).client;
    expect(client.access).toEqual({ mode: 'EVERYONE', groups: [], users: [], backends: [] });
    const read = await gql(`query($c: ID!) { client(clientId: $c) { access { mode groups users backends } } }`, { c: client.clientId });
    expect(read.data!.client).toEqual({ access: client.access });
  });

  test('an SP keeps its policy, roles and mappings; the fixed set and the roles attribute name are the defaults', async () => {
    const aws = {
      name: 'https://aws.amazon.com/SAML/Attributes/Role',
      source: 'GROUPS',
      groupFilter: '^aws-(\\d{12})-(\\w+)$',
      value: 'arn:aws:iam::$1:role/$2,arn:aws:iam::$1:saml-provider/Latchkey',
    };
    const registered = await gql(`mutation($i: SamlServiceProviderInput!) { registerSamlServiceProvider(input: $i) { ${SP} } }`, {
      i: {
        entityId: 'urn:amazon:webservices',
        assertionConsumerServiceUrls: ['https://signin.aws.amazon.com/saml'],
        allowIdpInitiated: true,
        access: { mode: 'ASSIGNED', groups: ['aws-users'] },
        roles: [{ name: 'viewer', groups: ['staff'] }],
        attributeMappings: [aws, { name: 'https://aws.amazon.com/SAML/Attributes/RoleSessionName', source: 'USERNAME' }],
        nameIdFormat: 'TRANSIENT',
      },
    });
    expect(registered.errors).toBeUndefined();
    expect(registered.data!.registerSamlServiceProvider).toMatchObject({
      access: { mode: 'ASSIGNED', groups: ['aws-users'] },
      roles: [{ name: 'viewer', groups: ['staff'] }],
      rolesAttribute: 'roles',
      nameIdFormat: 'TRANSIENT',
      nameIdAttribute: null,
      launchUrl: `${server.url}/saml/v20/sso?sp=urn%3Aamazon%3Awebservices`,
      attributeMappings: [
        { ...aws, nameFormat: 'URI', friendlyName: null, multiValued: true },
        { name: 'https://aws.amazon.com/SAML/Attributes/RoleSessionName', nameFormat: 'URI', source: 'USERNAME', multiValued: false },
      ],
    });
    const back = await gql(
      `mutation($e: String!, $i: SamlServiceProviderInput!) { updateSamlServiceProvider(entityId: $e, input: $i) { ${SP} } }`,
      {
        e: 'urn:amazon:webservices',
        i: { attributeMappings: null, nameIdFormat: 'UNSPECIFIED', nameIdAttribute: 'employeeNumber', rolesAttribute: 'memberOf' },
      },
    );
    expect(back.errors).toBeUndefined();
    expect(back.data!.updateSamlServiceProvider).toMatchObject({
      attributeMappings: null,
      nameIdAttribute: 'employeeNumber',
      rolesAttribute: 'memberOf',
    });
    refused(
      await gql(
        `mutation($e: String!, $i: SamlServiceProviderInput!) { updateSamlServiceProvider(entityId: $e, input: $i) { entityId } }`,
        {
          e: 'urn:amazon:webservices',
          i: { attributeMappings: [{ name: 'a', source: 'GROUPS', groupFilter: '[' }] },
        },
      ),
      'attributeMappings.0.groupFilter',
      /regular expression/,
    );
    // A roles attribute named like a fixed one would give two Attributes of one Name.
    for (const name of ['mail', 'groups', 'DisplayName'])
      refused(
        await gql(
          `mutation($e: String!, $i: SamlServiceProviderInput!) { updateSamlServiceProvider(entityId: $e, input: $i) { entityId } }`,
          { e: 'urn:amazon:webservices', i: { rolesAttribute: name } },
        ),
        'rolesAttribute',
        /fixed attributes/,
      );
  });
});
