import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { buildASTSchema, isObjectType, parse, valueFromASTUntyped } from 'graphql';
import { PERMISSIONS } from '../../src/admin-roles/model.ts';
import { guardResolvers, unguardedOperations } from '../../src/admin/permissions.ts';
import { declaredSchema, typeDefs } from '../../src/admin/server.ts';
import { adminCliToken, graphqlPost, type GraphQLAnswer } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshAddress, linkIn, MailServer, ResetBrowser } from '../password-reset/harness.ts';

/**
 * Delegated administration (docs/admin-api.md "Roles and permissions"): every operation declares its
 * permission in the SDL and is checked in one place; what each built-in role may and may not do,
 * through real admin-cli tokens of users holding it; application owners; the audit trail.
 */

describe('the schema walk', () => {
  test('every Query and Mutation field of the schema declares @requires, with a permission of the fixed list', () => {
    // Built from the same files the server reads, and walked here on its own, not through the check's code.
    const schema = buildASTSchema(parse(typeDefs.join('\n')));
    const missing: string[] = [];
    const unknown: string[] = [];
    for (const root of ['Query', 'Mutation']) {
      const type = schema.getType(root);
      if (!type || !isObjectType(type)) throw new Error(`no ${root}`);
      for (const field of Object.values(type.getFields())) {
        const requires = (field.astNode?.directives ?? []).filter((d) => d.name.value === 'requires');
        if (requires.length === 0) missing.push(`${root}.${field.name}`);
        for (const d of requires) {
          const permission = d.arguments?.find((a) => a.name.value === 'permission');
          if (permission && !(PERMISSIONS as readonly string[]).includes(valueFromASTUntyped(permission.value) as string)) {
            unknown.push(`${root}.${field.name}`);
          }
        }
      }
    }
    expect(missing).toEqual([]);
    expect(unknown).toEqual([]);
    expect(unguardedOperations(declaredSchema)).toEqual([]);
  });

  test('the server refuses to build a schema with an operation that declares nothing', () => {
    const schema = buildASTSchema(
      parse(`directive @requires(permission: String) repeatable on FIELD_DEFINITION
        type Query { users: Int @requires(permission: "users:read") leaky: Int }`),
    );
    expect(unguardedOperations(schema)).toEqual(['Query.leaky']);
    expect(() => guardResolvers(schema, [])).toThrow(/Query\.leaky/);
    const typo = buildASTSchema(
      parse('directive @requires(permission: String) on FIELD_DEFINITION type Query { a: Int @requires(permission: "user:read") }'),
    );
    expect(() => guardResolvers(typo, [])).toThrow(/user:read/);
  });
});

describe.each(databaseKinds)('built-in admin roles on %s', (kind) => {
  let server: TestServer;
  let smtp: MailServer;
  const ids: Record<string, string> = {};
  const tokens: Record<string, string> = {};

  const call = (who: string, query: string, variables?: Record<string, unknown>) => graphqlPost(server, tokens[who], query, variables);
  const ok = async (who: string, query: string, variables?: Record<string, unknown>) => {
    const res = await call(who, query, variables);
    expect({ status: res.status, errors: res.errors }).toEqual({ status: 200, errors: undefined });
    return res.data!;
  };
  /** FORBIDDEN (403), its message naming the permission. */
  const refused = async (who: string, permission: string, query: string, variables?: Record<string, unknown>): Promise<GraphQLAnswer> => {
    const res = await call(who, query, variables);
    expect(res.status).toBe(403);
    expect(res.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(res.errors?.[0]?.message).toContain(permission);
    return res;
  };

  beforeAll(async () => {
    smtp = await MailServer.start();
    server = await startTestServer(kind, {
      passwordReset: { enabled: true },
      smtp: { url: smtp.url, from: 'Latchkey <sso@example.com>' },
    });
    for (const [name, roles] of [
      ['helen', ['helpdesk']],
      ['audrey', ['auditor']],
      ['owen', ['app-owner']],
      ['root2', ['admin']],
    ] as const) {
      ids[name] = await server.user(name, `${name}-password-1`, { roles: [...roles], email: `${name}@example.com` });
      tokens[name] = (await adminCliToken(server, name, `${name}-password-1`)).access_token;
    }
    ids.pat = await server.user('pat', 'pat-password-1', { email: 'pat@example.com', groups: ['staff'] });
    tokens.admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    ids.admin = (await server.ctx.users.findByUsername('local', 'admin'))!.id;
  });
  afterAll(async () => {
    await server?.stop();
    await smtp?.close();
  });

  const VIEWER = '{ viewer { userId username roles permissions } }';

  test('viewer: each caller sees its roles and what they give', async () => {
    expect((await ok('helen', VIEWER)).viewer).toEqual({
      userId: ids.helen,
      username: 'helen',
      roles: ['helpdesk'],
      permissions: ['users:read', 'users:enable', 'users:credentials', 'users:mfa', 'sessions:end'],
    });
    expect((await ok('audrey', VIEWER)).viewer).toMatchObject({
      roles: ['auditor'],
      permissions: ['users:read', 'apps:read', 'backends:read', 'audit:read'],
    });
    expect((await ok('owen', VIEWER)).viewer).toMatchObject({ roles: ['app-owner'], permissions: ['apps:owned'] });
    expect((await ok('admin', VIEWER)).viewer).toMatchObject({ roles: ['admin'], permissions: [...PERMISSIONS] });
    // A user with no admin role gets no admin scope, and the API refuses them as before.
    const plain = await adminCliToken(server, 'pat', 'pat-password-1');
    expect(plain.scope.split(' ')).not.toContain('admin');
    const res = await graphqlPost(server, plain.access_token, VIEWER);
    expect([res.status, res.errors?.[0]?.extensions?.code]).toEqual([403, 'FORBIDDEN']);
  });

  test('helpdesk: reads users and groups, sets passwords, sends reset mails, resets MFA, disables and enables, ends sessions', async () => {
    expect((await ok('helen', '{ users { totalCount } user(id: "x") { id } groups { totalCount } }')).users).toMatchObject({
      totalCount: 6,
    });
    await ok('helen', 'mutation($id: ID!) { setUserPassword(id: $id, password: "pat-password-2") }', { id: ids.pat });
    expect((await adminCliToken(server, 'pat', 'pat-password-2')).access_token).toBeTruthy();
    await ok('helen', 'mutation($id: ID!) { resetUserMfa(id: $id) { id } }', { id: ids.pat });
    const off = await ok('helen', 'mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { disabled disabledBy } }', {
      id: ids.pat,
    });
    expect(off.updateUser).toEqual({ disabled: true, disabledBy: 'ADMIN' });
    await ok('helen', 'mutation($id: ID!) { updateUser(id: $id, input: { disabled: false }) { disabled } }', { id: ids.pat });
    const t = await adminCliToken(server, 'pat', 'pat-password-2');
    expect((await ok('helen', 'mutation($id: ID!) { revokeTokens(userId: $id) }', { id: ids.pat })).revokeTokens).toBeGreaterThan(0);
    expect((await server.ctx.tokens.authenticate(t.access_token)).ok).toBe(false);

    // The reset mail: its link sets a new password, as "Forgot your password?" does.
    expect((await ok('helen', 'mutation($id: ID!) { sendPasswordReset(userId: $id) }', { id: ids.pat })).sendPasswordReset).toBe(true);
    const mail = await smtp.nth('pat@example.com', 1);
    expect(mail.text).toContain('An administrator sent you this link');
    const done = await new ResetBrowser(server, freshAddress()).reset(linkIn(mail).token, {
      password: 'pat-password-3',
      confirm: 'pat-password-3',
    });
    expect(done.status).toBe(200);
    expect((await adminCliToken(server, 'pat', 'pat-password-3')).access_token).toBeTruthy();
  });

  test('helpdesk: nothing about applications, keys, backends, roles, the audit log, or other fields of a user', async () => {
    await refused('helen', 'users:write', 'mutation { createUser(input: { username: "x1", password: "x-password-1" }) { id } }');
    await refused('helen', 'users:write', 'mutation($id: ID!) { updateUser(id: $id, input: { email: "p@example.org" }) { id } }', {
      id: ids.pat,
    });
    // Disabling alone is theirs; with another field it needs users:write, and the refusal says which field.
    const mixed = await refused(
      'helen',
      'users:write',
      'mutation($id: ID!) { updateUser(id: $id, input: { disabled: true, displayName: "P" }) { id } }',
      { id: ids.pat },
    );
    expect(mixed.errors?.[0]?.message).toContain('input.displayName');
    await refused('helen', 'users:write', 'mutation($id: ID!) { deleteUser(id: $id) }', { id: ids.pat });
    await refused('helen', 'users:write', 'mutation($id: ID!) { setUserGroups(id: $id, groups: ["x"]) { id } }', { id: ids.pat });
    await refused('helen', 'apps:read', '{ clients { totalCount } }');
    await refused(
      'helen',
      'apps:write',
      'mutation { registerClient(input: { name: "x", redirectUris: [] , grantTypes: [CLIENT_CREDENTIALS] }) { clientSecret } }',
    );
    await refused('helen', 'apps:write', 'mutation($id: ID!) { revokeTokens(userId: $id, clientId: "admin-cli") }', { id: ids.pat });
    await refused('helen', 'backends:read', '{ signingKeys { kid } }');
    await refused('helen', 'backends:read', '{ identityBackends { id } }');
    await refused('helen', 'keys:manage', 'mutation { rotateSigningKeys { kid } }');
    await refused('helen', 'audit:read', '{ auditEvents { totalCount } }');
    await refused('helen', 'roles:manage', '{ adminRoles { name } }');
    await refused('helen', 'roles:manage', 'mutation { deleteAdminRole(name: "nope") }');
    // Nothing ran: pat's email is as it was.
    expect((await server.ctx.users.find(ids.pat!))!.email).toBe('pat@example.com');
  });

  test("helpdesk cannot act on an account holding more than it does (an admin's password, MFA, sessions)", async () => {
    for (const [query, permission] of [
      ['mutation($id: ID!) { setUserPassword(id: $id, password: "taken-over-1") }', 'users:write'],
      ['mutation($id: ID!) { sendPasswordReset(userId: $id) }', 'users:write'],
      ['mutation($id: ID!) { resetUserMfa(id: $id) { id } }', 'users:write'],
      ['mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { id } }', 'users:write'],
      ['mutation($id: ID!) { revokeTokens(userId: $id) }', 'users:write'],
    ] as const) {
      const res = await refused('helen', permission, query, { id: ids.root2 });
      expect(res.errors?.[0]?.message).toContain(`user ${ids.root2} holds permissions you lack`);
    }
    expect((await adminCliToken(server, 'root2', 'root2-password-1')).access_token).toBeTruthy();
    // Another helpdesk user holds no more than they do.
    const other = await server.user('hank', 'hank-password-1', { roles: ['helpdesk'] });
    await ok('helen', 'mutation($id: ID!) { setUserPassword(id: $id, password: "hank-password-2") }', { id: other });
  });

  test('sendPasswordReset: clear refusals for a user without email, and for a server without resets', async () => {
    const noMail = await server.user('nomail', 'nomail-password-1');
    const res = await call('helen', 'mutation($id: ID!) { sendPasswordReset(userId: $id) }', { id: noMail });
    expect(res.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'userId' } });
    expect(res.errors?.[0]?.message).toContain('has no email address');
    const missing = await call('helen', 'mutation { sendPasswordReset(userId: "no-such-user") }');
    expect(missing.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const bare = await startTestServer('sqlite');
    try {
      const id = await bare.user('desk', 'desk-password-1', { roles: ['helpdesk'] });
      const target = await bare.user('tom', 'tom-password-1', { email: 'tom@example.com' });
      const token = (await adminCliToken(bare, 'desk', 'desk-password-1')).access_token;
      const off = await graphqlPost(bare, token, 'mutation($id: ID!) { sendPasswordReset(userId: $id) }', { id: target });
      expect(off.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'userId' } });
      expect(off.errors?.[0]?.message).toContain('password resets by mail are off here');
      expect(id).toBeTruthy();
    } finally {
      await bare.stop();
    }
  });

  test('auditor: reads everything, the audit log included; changes nothing', async () => {
    const read = await ok(
      'audrey',
      `{ users { totalCount } clients { totalCount } auditEvents(first: 5) { totalCount } identityBackends { id }
         signingKeys { kid } scimTokens { id } samlServiceProviders { entityId } groups { totalCount }
         samlIdentityProvider { entityId } previewAccess(applicationId: "admin-cli", userId: "${ids.pat}") { allowed } }`,
    );
    expect(read.users).toMatchObject({ totalCount: expect.any(Number) });
    expect((read.auditEvents as { totalCount: number }).totalCount).toBeGreaterThan(0);
    await refused('audrey', 'users:write', 'mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { id } }', { id: ids.pat });
    await refused('audrey', 'users:credentials', 'mutation($id: ID!) { setUserPassword(id: $id, password: "audited-pw-1") }', {
      id: ids.pat,
    });
    await refused('audrey', 'apps:write', 'mutation { rotateClientSecret(clientId: "admin-cli") { clientSecret } }');
    await refused('audrey', 'keys:manage', 'mutation { createScimToken(backend: "x") { token } }');
    await refused('audrey', 'roles:manage', 'mutation { createAdminRole(name: "r", permissions: ["users:read"]) { name } }');
    // Every permission it holds reads; none reveals a secret (secrets are only in the answers of changes).
    const { viewer } = (await ok('audrey', VIEWER)) as { viewer: { permissions: string[] } };
    expect(viewer.permissions.every((p) => p.endsWith(':read'))).toBe(true);
  });

  describe('app-owner', () => {
    let mine: string;
    let theirs: string;
    const SP = 'https://wiki.example.com/saml';

    beforeAll(async () => {
      const register = async (name: string, owners: string[]) =>
        (
          (
            await ok('admin', 'mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId owners } } }', {
              input: { name, redirectUris: ['https://app.example.com/cb'], owners },
            })
          ).registerClient as { client: { clientId: string; owners: string[] } }
        ).client;
      const a = await register('Owned app', [ids.owen!]);
      expect(a.owners).toEqual([ids.owen]);
      mine = a.clientId;
      theirs = (await register('Other app', [])).clientId;
      await ok('admin', 'mutation($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId owners } }', {
        input: { entityId: SP, assertionConsumerServiceUrls: ['https://wiki.example.com/acs'], owners: [ids.owen] },
      });
      await ok('admin', 'mutation($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId } }', {
        input: { entityId: 'https://other.example.com/saml', assertionConsumerServiceUrls: ['https://other.example.com/acs'] },
      });
    });

    test('sees and reads only the applications it owns', async () => {
      const list = await ok('owen', '{ clients { totalCount edges { node { clientId } } } samlServiceProviders { entityId } }');
      expect(list.clients).toEqual({ totalCount: 1, edges: [{ node: { clientId: mine } }] });
      expect(list.samlServiceProviders).toEqual([{ entityId: SP }]);
      expect((await ok('owen', 'query($id: ID!) { client(clientId: $id) { name } }', { id: mine })).client).toEqual({ name: 'Owned app' });
      await refused('owen', 'apps:read', 'query($id: ID!) { client(clientId: $id) { name } }', { id: theirs });
      await refused('owen', 'apps:read', '{ samlServiceProvider(entityId: "https://other.example.com/saml") { name } }');
      await refused('owen', 'users:read', '{ users { totalCount } }');
    });

    test('changes redirect URIs, access, roles and claims and rotates the secret of its own; nothing else', async () => {
      const changed = await ok(
        'owen',
        `mutation($id: ID!) { updateClient(clientId: $id, input: {
           redirectUris: ["https://app.example.com/cb2"], access: { mode: ASSIGNED, groups: ["staff"] },
           applicationRoles: [{ name: "editor", groups: ["staff"] }], claimMappings: [{ claim: "dept", source: STATIC, value: "R&D" }] }) {
           redirectUris access { mode } } }`,
        { id: mine },
      );
      expect(changed.updateClient).toEqual({ redirectUris: ['https://app.example.com/cb2'], access: { mode: 'ASSIGNED' } });
      const rotated = await ok('owen', 'mutation($id: ID!) { rotateClientSecret(clientId: $id) { clientSecret } }', { id: mine });
      expect((rotated.rotateClientSecret as { clientSecret: string }).clientSecret).toMatch(/.{20,}/);

      const scopes = await refused(
        'owen',
        'apps:write',
        'mutation($id: ID!) { updateClient(clientId: $id, input: { scopes: ["openid", "admin"] }) { clientId } }',
        { id: mine },
      );
      expect(scopes.errors?.[0]?.message).toContain('input.scopes');
      const owners = await refused(
        'owen',
        'apps:write',
        'mutation($id: ID!) { updateClient(clientId: $id, input: { owners: [] }) { clientId } }',
        { id: mine },
      );
      expect(owners.errors?.[0]?.message).toContain('input.owners');
      await refused('owen', 'apps:write', 'mutation($id: ID!) { updateClient(clientId: $id, input: { redirectUris: [] }) { clientId } }', {
        id: theirs,
      });
      await refused('owen', 'apps:write', 'mutation($id: ID!) { rotateClientSecret(clientId: $id) { clientSecret } }', { id: theirs });
      await refused('owen', 'apps:write', 'mutation($id: ID!) { deleteClient(clientId: $id) }', { id: mine });
      await refused(
        'owen',
        'apps:write',
        'mutation { registerClient(input: { name: "mine too", redirectUris: ["https://x.example.com/cb"] }) { clientSecret } }',
      );
      expect((await server.ctx.clients.find(mine))!.scopes).not.toContain('admin');

      const sp = await ok(
        'owen',
        `mutation { updateSamlServiceProvider(entityId: "${SP}", input: { assertionConsumerServiceUrls: ["https://wiki.example.com/acs2"] }) { assertionConsumerServiceUrls } }`,
      );
      expect(sp.updateSamlServiceProvider).toEqual({ assertionConsumerServiceUrls: ['https://wiki.example.com/acs2'] });
      await refused(
        'owen',
        'apps:write',
        `mutation { updateSamlServiceProvider(entityId: "${SP}", input: { signAssertions: false, signResponses: true }) { entityId } }`,
      );
      await refused('owen', 'apps:write', `mutation { deleteSamlServiceProvider(entityId: "${SP}") }`);
    });

    test('owners are set by apps:write holders and kept', async () => {
      const res = await ok('admin', 'mutation($id: ID!, $o: [ID!]) { updateClient(clientId: $id, input: { owners: $o }) { owners } }', {
        id: theirs,
        o: [ids.owen, ids.owen, ids.helen],
      });
      expect(res.updateClient).toEqual({ owners: [ids.owen, ids.helen] });
      expect((await ok('owen', '{ clients { totalCount } }')).clients).toEqual({ totalCount: 2 });
    });

    test('owning a client that holds rights gives nothing over it (a row named owners before the rule)', async () => {
      const made = await ok('admin', 'mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId } } }', {
        input: { name: 'Old automation', redirectUris: [], grantTypes: ['CLIENT_CREDENTIALS'], roles: ['admin'] },
      });
      const automation = (made.registerClient as { client: { clientId: string } }).client.clientId;
      // The API no longer names owners of such a client; a row from before may still.
      await server
        .sql('clients')
        .where({ client_id: automation })
        .update({ owners: JSON.stringify([ids.owen]) });
      const before = (await server.ctx.clients.find(automation))!;
      expect(before.owners).toEqual([ids.owen]);
      const rotate = await refused(
        'owen',
        'only an admin may rotate its secret',
        'mutation($id: ID!) { rotateClientSecret(clientId: $id) { clientSecret } }',
        {
          id: automation,
        },
      );
      expect(rotate.data?.rotateClientSecret ?? null).toBeNull();
      await refused(
        'owen',
        'only an admin may change it',
        'mutation($id: ID!) { updateClient(clientId: $id, input: { redirectUris: ["https://attacker.example.net/cb"] }) { clientId } }',
        { id: automation },
      );
      expect(await server.ctx.clients.find(automation)).toMatchObject({ secretHash: before.secretHash, redirectUris: [] });
      await ok('admin', 'mutation($id: ID!) { updateClient(clientId: $id, input: { owners: null }) { clientId } }', { id: automation });
    });
  });

  /** A user holding a new custom role of `permissions`, with an admin-cli token in `tokens[name]`. */
  const holder = async (name: string, permissions: string[]) => {
    await ok('admin', 'mutation($n: String!, $p: [String!]!) { createAdminRole(name: $n, permissions: $p) { name } }', {
      n: `${name}-role`,
      p: permissions,
    });
    ids[name] = await server.user(name, `${name}-password-1`, { roles: [`${name}-role`] });
    tokens[name] = (await adminCliToken(server, name, `${name}-password-1`)).access_token;
  };

  test('SCIM tokens take what a SCIM token does (users:write, users:credentials, users:enable) besides keys:manage', async () => {
    await holder('kit', ['keys:manage', 'backends:read']);
    await holder('pia', ['keys:manage', 'users:read', 'users:write', 'users:credentials', 'users:enable']);
    const CREATE = 'mutation { createScimToken(backend: "hr") { token } }';
    const made = await refused('kit', 'createScimToken needs the permission users:write', CREATE);
    expect(made.errors?.[0]?.extensions?.permission).toBe('users:write');
    await refused('kit', 'revokeScimToken needs the permission users:write', 'mutation { revokeScimToken(id: "x") }');
    await holder('uma', ['keys:manage', 'users:write']);
    await refused('uma', 'createScimToken needs the permission users:credentials', CREATE);
    // The list shows no secret and nothing about users: backends:read, as before.
    expect((await ok('kit', '{ scimTokens { id } }')).scimTokens).toEqual([]);
    // pia passes the check: the service then judges the backend (none of plugin scim here).
    const res = await call('pia', CREATE);
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'backend' });
    expect((await ok('pia', 'mutation { revokeScimToken(id: "x") }')).revokeScimToken).toBe(false);
  });

  test('a webhook receives the audit trail: registering one, or changing where it goes or what it gets, takes audit:read too', async () => {
    await holder('wendy', ['webhooks:manage']);
    await holder('walt', ['webhooks:manage', 'audit:read']);
    const REGISTER = 'mutation($url: String!) { registerWebhook(url: $url, events: ["*"]) { webhook { id } } }';
    const url = 'https://hooks.example.invalid/latchkey';
    const refusal = await refused('wendy', 'registerWebhook needs the permission audit:read', REGISTER, { url });
    expect(refusal.errors?.[0]?.extensions?.permission).toBe('audit:read');
    expect((await ok('admin', '{ webhooks { id } }')).webhooks).toEqual([]);
    const id = ((await ok('walt', REGISTER, { url })).registerWebhook as { webhook: { id: string } }).webhook.id;
    const UPDATE =
      'mutation($id: ID!, $url: String, $events: [String!], $d: String) { updateWebhook(id: $id, url: $url, events: $events, description: $d) { url events description } }';
    await refused('wendy', 'updateWebhook(url) needs the permission audit:read', UPDATE, { id, url: 'https://attacker.example.net/hook' });
    await refused('wendy', 'updateWebhook(events) needs the permission audit:read', UPDATE, { id, events: ['login.*'] });
    // The rest of webhooks:manage stays: the list, a note, deliveries, deleting.
    expect((await ok('wendy', UPDATE, { id, d: 'SIEM bridge' })).updateWebhook).toEqual({ url, events: ['*'], description: 'SIEM bridge' });
    expect((await ok('wendy', '{ webhooks { id } }')).webhooks).toEqual([{ id }]);
    expect((await ok('walt', UPDATE, { id, events: ['user.*'] })).updateWebhook).toMatchObject({ events: ['user.*'] });
    expect((await ok('wendy', 'mutation($id: ID!) { deleteWebhook(id: $id) }', { id })).deleteWebhook).toBe(true);
  });

  test('every admin change records the actor, the permission it used and the role that gave it', async () => {
    const { auditEvents } = (await ok(
      'admin',
      '{ auditEvents(first: 100, kind: "admin.change") { edges { node { actorUserId permission role details } } } }',
    )) as {
      auditEvents: { edges: Array<{ node: { actorUserId: string; permission: string | null; role: string | null; details: string } }> };
    };
    const events = auditEvents.edges.map((e) => ({ ...e.node, action: JSON.parse(e.node.details).action as string }));
    const by = (who: string, action: string) => events.find((e) => e.actorUserId === ids[who] && e.action === action);
    expect(by('helen', 'user.set_password')).toMatchObject({ permission: 'users:credentials', role: 'helpdesk' });
    expect(by('helen', 'user.update')).toMatchObject({ permission: 'users:enable', role: 'helpdesk' });
    expect(by('helen', 'user.reset_mfa')).toMatchObject({ permission: 'users:mfa', role: 'helpdesk' });
    expect(by('helen', 'tokens.revoke')).toMatchObject({ permission: 'sessions:end', role: 'helpdesk' });
    expect(by('helen', 'user.send_password_reset')).toMatchObject({ permission: 'users:credentials', role: 'helpdesk' });
    expect(by('owen', 'client.update')).toMatchObject({ permission: 'apps:owned', role: 'app-owner' });
    expect(by('owen', 'client.rotate_secret')).toMatchObject({ permission: 'apps:owned', role: 'app-owner' });
    expect(by('admin', 'client.register')).toMatchObject({ permission: 'apps:write', role: 'admin' });
    // Changes made outside the API (the CLI, the server) name no permission.
    expect(events.filter((e) => JSON.parse(e.details).via !== 'graphql').every((e) => e.permission === null)).toBe(true);
  });
});
