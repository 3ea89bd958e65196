import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as consoleCatalogue from '../../console/src/auth/catalogue.ts';
import { CLIENT_GRANTS } from '../../src/admin-roles/rules.ts';
import { ADMIN_CLIENTS } from '../../src/clients/scopes.ts';
import { upstreamRoles } from '../../src/identity/upstreams/policy.ts';
import { groupDn, people } from '../fixtures/ldap/directory.ts';
import { adminCliToken, graphqlPost, type GraphQLAnswer } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

/**
 * Custom admin roles, no escalation, and roles given by directory groups (docs/admin-api.md "Roles and
 * permissions"), through the admin API with real admin-cli tokens.
 */
describe.each(databaseKinds)('custom admin roles on %s', (kind) => {
  let server: TestServer;
  const ids: Record<string, string> = {};

  const token = async (username: string) =>
    (await adminCliToken(server, username, username === 'admin' ? ADMIN_PASSWORD : `${username}-password-1`)).access_token;
  const call = async (who: string, query: string, variables?: Record<string, unknown>) =>
    graphqlPost(server, await token(who), query, variables);
  const ok = async (who: string, query: string, variables?: Record<string, unknown>) => {
    const res = await call(who, query, variables);
    expect({ status: res.status, errors: res.errors }).toEqual({ status: 200, errors: undefined });
    return res.data!;
  };
  const refused = async (who: string, words: string, query: string, variables?: Record<string, unknown>): Promise<GraphQLAnswer> => {
    const res = await call(who, query, variables);
    expect([res.status, res.errors?.[0]?.extensions?.code]).toEqual([403, 'FORBIDDEN']);
    expect(res.errors?.[0]?.message).toContain(words);
    return res;
  };
  const badInput = async (who: string, field: string, query: string, variables?: Record<string, unknown>) => {
    const res = await call(who, query, variables);
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
    return res.errors![0]!.message;
  };
  const CREATE =
    'mutation($n: String!, $p: [String!]!, $d: String) { createAdminRole(name: $n, permissions: $p, description: $d) { name permissions builtIn description createdAt } }';
  const SET_ROLES = 'mutation($id: ID!, $r: [String!]) { updateUser(id: $id, input: { roles: $r }) { roles } }';
  const VIEWER = '{ viewer { roles permissions } }';

  beforeAll(async () => {
    server = await startTestServer(kind);
    for (const name of ['vera', 'max', 'pat', 'appy']) ids[name] = await server.user(name, `${name}-password-1`);
    ids.root2 = await server.user('root2', 'root2-password-1', { roles: ['admin'] });
  });
  afterAll(() => server?.stop());

  test('an admin makes a role from the fixed list; its holders get exactly its permissions', async () => {
    const made = await ok('admin', CREATE, { n: 'session-desk', p: ['sessions:end', 'users:read', 'users:read'], d: 'Ends sessions' });
    expect(made.createAdminRole).toMatchObject({ name: 'session-desk', permissions: ['users:read', 'sessions:end'], builtIn: false });
    const { adminRoles } = (await ok('admin', '{ adminRoles { name builtIn permissions } }')) as {
      adminRoles: Array<{ name: string; builtIn: boolean }>;
    };
    expect(adminRoles.map((r) => [r.name, r.builtIn])).toEqual([
      ['admin', true],
      ['helpdesk', true],
      ['auditor', true],
      ['app-owner', true],
      ['session-desk', false],
    ]);
    await ok('admin', SET_ROLES, { id: ids.vera, r: ['session-desk'] });
    expect((await ok('vera', VIEWER)).viewer).toEqual({ roles: ['session-desk'], permissions: ['users:read', 'sessions:end'] });
    await ok('vera', 'mutation($id: ID!) { revokeTokens(userId: $id) }', { id: ids.pat });
    await refused('vera', 'users:credentials', 'mutation($id: ID!) { setUserPassword(id: $id, password: "pat-password-2") }', {
      id: ids.pat,
    });

    // A change of the role reaches its holders at their next request.
    await ok(
      'admin',
      'mutation { updateAdminRole(name: "session-desk", permissions: ["users:read", "sessions:end", "users:mfa"]) { permissions } }',
    );
    await ok('vera', 'mutation($id: ID!) { resetUserMfa(id: $id) { id } }', { id: ids.pat });
    const audit = (await ok(
      'admin',
      `{ auditEvents(first: 20, kind: "admin.change", userId: "${ids.pat}") { edges { node { actorUserId permission role } } } }`,
    )) as {
      auditEvents: { edges: Array<{ node: Record<string, string> }> };
    };
    expect(audit.auditEvents.edges.map((e) => e.node)).toContainEqual({
      actorUserId: ids.vera,
      permission: 'users:mfa',
      role: 'session-desk',
    });

    // Deleted, it gives nothing: vera holds no admin role any more.
    expect((await ok('admin', 'mutation { deleteAdminRole(name: "session-desk") }')).deleteAdminRole).toBe(true);
    const gone = await call('vera', VIEWER);
    expect([gone.status, gone.errors?.[0]?.extensions?.code]).toEqual([403, 'FORBIDDEN']);
    expect((await ok('admin', 'mutation { deleteAdminRole(name: "session-desk") }')).deleteAdminRole).toBe(false);
  });

  test('bad input names the field: built-in names, taken names, unknown permissions', async () => {
    expect(await badInput('admin', 'name', CREATE, { n: 'helpdesk', p: ['users:read'] })).toContain('built-in');
    expect(await badInput('admin', 'permissions', CREATE, { n: 'x', p: ['users:delete'] })).toContain('"users:delete" is not a permission');
    expect(await badInput('admin', 'permissions', CREATE, { n: 'x', p: [] })).toContain('at least one');
    expect(await badInput('admin', 'name', CREATE, { n: 'has space', p: ['users:read'] })).toContain('must be');
    await ok('admin', CREATE, { n: 'readers', p: ['users:read'] });
    expect(await badInput('admin', 'name', CREATE, { n: 'readers', p: ['users:read'] })).toContain('exists already');
    expect(
      await badInput('admin', 'name', 'mutation { updateAdminRole(name: "auditor", permissions: ["users:read"]) { name } }'),
    ).toContain('built-in');
    expect(await badInput('admin', 'name', 'mutation { deleteAdminRole(name: "admin") }')).toContain('built-in');
  });

  test('no escalation: nobody makes, changes or gives a role with a permission they lack; admin only by an admin', async () => {
    // max manages roles and users, and reads them; nothing more.
    await ok('admin', CREATE, { n: 'role-manager', p: ['roles:manage', 'users:read', 'users:write'] });
    await ok('admin', SET_ROLES, { id: ids.max, r: ['role-manager'] });

    await ok('max', CREATE, { n: 'user-reader', p: ['users:read'] });
    await refused('max', 'apps:write', CREATE, { n: 'app-writer', p: ['users:read', 'apps:write'] });
    await refused(
      'max',
      'users:credentials',
      'mutation { updateAdminRole(name: "user-reader", permissions: ["users:read", "users:credentials"]) { name } }',
    );
    await ok('admin', CREATE, { n: 'key-keeper', p: ['keys:manage'] });
    await refused('max', 'keys:manage', 'mutation { updateAdminRole(name: "key-keeper", description: "mine now") { name } }');
    await refused('max', 'keys:manage', 'mutation { deleteAdminRole(name: "key-keeper") }');

    // Giving roles: only those whose permissions max holds; admin never.
    expect((await ok('max', SET_ROLES, { id: ids.pat, r: ['user-reader'] })).updateUser).toEqual({ roles: ['user-reader'] });
    await refused('max', 'users:credentials', SET_ROLES, { id: ids.pat, r: ['user-reader', 'helpdesk'] });
    await refused('max', 'only an admin may give or take the admin role', SET_ROLES, { id: ids.pat, r: ['admin'] });
    await refused(
      'max',
      'only an admin',
      'mutation { createUser(input: { username: "sneaky", password: "sneaky-password-1", roles: ["admin"] }) { id } }',
    );
    await refused('max', 'keys:manage', SET_ROLES, { id: ids.pat, r: ['key-keeper'] });
    // Nor act on an account holding more: an admin's roles, or their deletion.
    await refused('max', `user ${ids.root2} holds permissions you lack`, SET_ROLES, { id: ids.root2, r: [] });
    await refused('max', `user ${ids.root2} holds permissions you lack`, 'mutation($id: ID!) { deleteUser(id: $id) }', { id: ids.root2 });
    expect((await server.ctx.users.find(ids.root2!))!.roles).toEqual(['admin']);
    expect((await server.ctx.users.find(ids.pat!))!.roles).toEqual(['user-reader']);

    // Roles need roles:manage besides users:write.
    await ok('admin', CREATE, { n: 'user-writer', p: ['users:read', 'users:write'] });
    await ok('admin', SET_ROLES, { id: ids.vera, r: ['user-writer'] });
    const noManage = await refused('vera', 'roles:manage', SET_ROLES, { id: ids.pat, r: [] });
    expect(noManage.errors?.[0]?.message).toContain('input.roles');
    await ok('vera', 'mutation($id: ID!) { updateUser(id: $id, input: { displayName: "Pat" }) { id } }', { id: ids.pat });

    // An admin gives admin.
    await ok('admin', SET_ROLES, { id: ids.pat, r: ['admin'] });
    await ok('root2', SET_ROLES, { id: ids.pat, r: [] });
  });

  test("no escalation for applications: a client's admin role and admin scope only by an admin", async () => {
    await ok('admin', CREATE, { n: 'app-admin', p: ['apps:read', 'apps:write'] });
    await ok('admin', SET_ROLES, { id: ids.appy, r: ['app-admin'] });
    const REGISTER = 'mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId } } }';
    const made = await ok('appy', REGISTER, { input: { name: 'Plain', redirectUris: ['https://p.example.com/cb'] } });
    const clientId = (made.registerClient as { client: { clientId: string } }).client.clientId;
    await refused('appy', "only an admin may give or take a client's admin role", REGISTER, {
      input: { name: 'Service', redirectUris: [], grantTypes: ['CLIENT_CREDENTIALS'], roles: ['admin'] },
    });
    await refused(
      'appy',
      "only an admin may give or take a client's admin scope",
      'mutation($id: ID!) { updateClient(clientId: $id, input: { scopes: ["openid", "admin"] }) { clientId } }',
      {
        id: clientId,
      },
    );
    await refused('appy', 'users:write', 'mutation($id: ID!) { updateClient(clientId: $id, input: { roles: ["scim"] }) { clientId } }', {
      id: clientId,
    });
    expect((await server.ctx.clients.find(clientId))!.scopes).not.toContain('admin');
    await ok('admin', 'mutation($id: ID!) { updateClient(clientId: $id, input: { roles: ["introspect"] }) { clientId } }', {
      id: clientId,
    });
  });

  describe('acting on a client needs what it holds now, not only what changes', () => {
    const REGISTER = 'mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId } } }';
    const UPDATE = 'mutation($id: ID!, $input: UpdateClientInput!) { updateClient(clientId: $id, input: $input) { clientId } }';
    const ROTATE = 'mutation($id: ID!) { rotateClientSecret(clientId: $id) { clientSecret } }';
    const DELETE = 'mutation($id: ID!) { deleteClient(clientId: $id) }';
    const app: Record<string, string> = {};
    const register = async (input: Record<string, unknown>) =>
      ((await ok('admin', REGISTER, { input })).registerClient as { client: { clientId: string } }).client.clientId;
    const service = { redirectUris: [], grantTypes: ['CLIENT_CREDENTIALS'] };

    beforeAll(async () => {
      // wes registers and changes applications; rita may besides read users.
      await ok('admin', CREATE, { n: 'client-writer', p: ['apps:read', 'apps:write'] });
      await ok('admin', CREATE, { n: 'resource-writer', p: ['apps:read', 'apps:write', 'users:read'] });
      ids.wes = await server.user('wes', 'wes-password-1', { roles: ['client-writer'] });
      ids.rita = await server.user('rita', 'rita-password-1', { roles: ['resource-writer'] });
      app.automation = await register({ name: 'Automation', ...service, roles: ['admin'] });
      app.feed = await register({ name: 'HR feed', ...service, roles: ['scim'] });
      app.api = await register({ name: 'Orders API', ...service, roles: ['introspect'] });
      app.portal = await register({ name: 'Ops portal', redirectUris: ['https://ops.example.com/cb'], scopes: ['openid', 'admin'] });
      app.wiki = await register({ name: 'Wiki', redirectUris: ['https://wiki.example.com/cb'] });
    });

    test("apps:write alone neither rotates an admin client's secret nor redirects an admin client's sign-ins", async () => {
      const secretHash = (await server.ctx.clients.find(app.automation!))!.secretHash;
      // Its client_credentials token would be an admin's: the secret is the admin role.
      const rotate = await refused('wes', `client ${app.automation} holds the admin role: only an admin may rotate its secret`, ROTATE, {
        id: app.automation,
      });
      expect(rotate.data?.rotateClientSecret ?? null).toBeNull();
      expect((await server.ctx.clients.find(app.automation!))!.secretHash).toBe(secretHash);
      await refused('wes', 'only an admin may change it', UPDATE, { id: app.automation, input: { name: 'Automation (mine)' } });
      await refused('wes', 'only an admin may delete it', DELETE, { id: app.automation });

      // The built-in admin clients and a client with the admin scope: their redirect URIs are where admins' tokens go.
      const consoleUris = (await server.ctx.clients.find('admin-console'))!.redirectUris;
      await refused('wes', 'client admin-console is a built-in admin client: only an admin may change it', UPDATE, {
        id: 'admin-console',
        input: { redirectUris: ['https://attacker.example.net/cb'] },
      });
      await refused('wes', 'client admin-cli is a built-in admin client', UPDATE, { id: 'admin-cli', input: { name: 'CLI' } });
      await refused('wes', `client ${app.portal} has the admin scope: only an admin may change it`, UPDATE, {
        id: app.portal,
        input: { redirectUris: ['https://attacker.example.net/cb'] },
      });
      expect((await server.ctx.clients.find('admin-console'))!.redirectUris).toEqual(consoleUris);
      expect((await server.ctx.clients.find(app.portal!))!.redirectUris).toEqual(['https://ops.example.com/cb']);
      expect((await server.ctx.clients.find(app.automation!))!.name).toBe('Automation');
    });

    test('a SCIM client takes what a SCIM token does; a resource server (introspect) takes users:read', async () => {
      const feed = await refused('wes', `client ${app.feed} holds the scim role`, ROTATE, { id: app.feed });
      expect(feed.errors?.[0]?.message).toContain('you lack users:write, users:credentials, users:enable');
      expect(feed.errors?.[0]?.extensions?.permission).toBe('users:write');
      await refused('wes', 'users:read', UPDATE, { id: app.api, input: { name: 'Orders API v2' } });
      await refused('rita', 'users:write', UPDATE, { id: app.feed, input: { name: 'HR feed v2' } });
      await ok('rita', UPDATE, { id: app.api, input: { name: 'Orders API v2' } });
      expect((await ok('rita', ROTATE, { id: app.api })).rotateClientSecret).toMatchObject({ clientSecret: expect.any(String) });
    });

    test("an application's own changes stay apps:write's, and an admin does every one", async () => {
      await ok('wes', UPDATE, { id: app.wiki, input: { redirectUris: ['https://wiki.example.com/cb2'] } });
      await ok('wes', ROTATE, { id: app.wiki });
      const rotated = await ok('admin', ROTATE, { id: app.automation });
      expect(rotated.rotateClientSecret).toMatchObject({ clientSecret: expect.any(String) });
      await ok('admin', UPDATE, { id: 'admin-cli', input: { name: 'Latchkey admin CLI' } });
      await ok('admin', UPDATE, { id: app.feed, input: { name: 'HR feed' } });
    });

    test('a client holding rights has no owners, either way round (BAD_USER_INPUT naming the field)', async () => {
      const own = { owners: [ids.pat] };
      expect(await badInput('admin', 'owners', REGISTER, { input: { name: 'Owned feed', ...service, roles: ['scim'], ...own } })).toContain(
        'has no owners',
      );
      for (const id of [app.automation, app.feed, app.api, app.portal, 'admin-console']) {
        expect(await badInput('admin', 'owners', UPDATE, { id, input: own })).toContain(`client ${id} holds`);
      }
      const team = await register({ name: 'Team tool', redirectUris: ['https://team.example.com/cb'], ...own });
      expect(await badInput('admin', 'roles', UPDATE, { id: team, input: { roles: ['introspect'] } })).toContain('has owners');
      expect(await badInput('admin', 'scopes', UPDATE, { id: team, input: { scopes: ['openid', 'admin'] } })).toContain('has owners');
      // Without its owners it may: the owners go in the same change.
      await ok('admin', UPDATE, { id: team, input: { owners: null, roles: ['introspect'] } });
      expect((await server.ctx.clients.find(team))!).toMatchObject({ owners: [], roles: ['introspect'] });
      expect((await server.ctx.clients.find(app.automation!))!.owners).toEqual([]);
    });
  });
});

describe("the console's copy of what a client's rights take", () => {
  test("is the server's: it hides the buttons the API would refuse", () => {
    expect(consoleCatalogue.CLIENT_GRANTS).toEqual(CLIENT_GRANTS);
    expect([...consoleCatalogue.ADMIN_CLIENTS].sort()).toEqual([...ADMIN_CLIENTS].sort());
  });
});

describe('upstream adminRoleGroups', () => {
  test('roles of the groups an upstream reports; none configured leaves the roles to the administrators', () => {
    expect(
      upstreamRoles({ adminGroups: ['admins'], adminRoleGroups: { helpdesk: ['desk'], auditor: ['audit'] } }, ['desk', 'admins']),
    ).toEqual(['admin', 'helpdesk']);
    expect(upstreamRoles({ adminGroups: [], adminRoleGroups: { helpdesk: ['desk'] } }, ['other'])).toEqual([]);
    expect(upstreamRoles({ adminGroups: [], adminRoleGroups: {} }, ['desk'])).toBeUndefined();
  });
});

describe('adminRoleGroups of an LDAP backend, through a real slapd', () => {
  let slapd: Slapd;
  let server: TestServer;

  const viewer = async (username: string, password: string) => {
    const t = await adminCliToken(server, username, password);
    return graphqlPost(server, t.access_token, '{ viewer { roles permissions } }');
  };

  beforeAll(async () => {
    slapd = await startSlapd();
    server = await startTestServer(
      'sqlite',
      ldapChain(
        ldapBackendConfig(slapd, {
          // adminGroups stays: { admin: [latchkey-admins] }. Groups by name or by DN; staff holds engineers (nested).
          adminRoleGroups: { helpdesk: ['engineers'], auditor: [groupDn('staff')], 'loop-watch': ['LOOP-B'] },
        }),
      ),
    );
  });
  afterAll(async () => {
    await server?.stop();
    await slapd?.destroy();
  });

  test("a directory user's roles are those of their groups, nested ones included, at each sign-in", async () => {
    const alice = await viewer('alice', people.alice.password);
    expect(alice.data?.viewer).toMatchObject({ roles: ['admin', 'auditor'] });
    const bob = await viewer('bob', people.bob.password);
    // loop-watch is no role yet: it gives nothing, and is no admin role.
    expect(bob.data?.viewer).toEqual({
      roles: ['helpdesk', 'auditor'],
      permissions: [
        'users:read',
        'users:enable',
        'users:credentials',
        'users:mfa',
        'sessions:end',
        'apps:read',
        'backends:read',
        'audit:read',
      ],
    });
    // Made a custom role, the group's name gives it.
    const admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    const made = await graphqlPost(
      server,
      admin,
      'mutation { createAdminRole(name: "loop-watch", permissions: ["keys:manage"]) { name } }',
    );
    expect(made.errors).toBeUndefined();
    const again = await viewer('bob', people.bob.password);
    expect(again.data?.viewer).toMatchObject({ roles: ['helpdesk', 'auditor', 'loop-watch'] });
    const rotate = await graphqlPost(
      server,
      (await adminCliToken(server, 'bob', people.bob.password)).access_token,
      'mutation { rotateSigningKeys { kid } }',
    );
    expect(rotate.errors).toBeUndefined();
    // The helpdesk role from a group still cannot touch an admin (alice holds admin through latchkey-admins).
    const bobToken = (await adminCliToken(server, 'bob', people.bob.password)).access_token;
    const aliceId = ((await server.ctx.users.findByUsername('corp', 'alice')) ?? { id: '' }).id;
    const takeover = await graphqlPost(server, bobToken, 'mutation($id: ID!) { resetUserMfa(id: $id) { id } }', { id: aliceId });
    expect(takeover.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  test('a directory sync asked for through the API needs users:write and users:enable, and names its actor', async () => {
    const SYNC = 'mutation { syncBackend(id: "corp") { outcome } }';
    const bob = (await adminCliToken(server, 'bob', people.bob.password)).access_token;
    const refused = await graphqlPost(server, bob, SYNC);
    expect([refused.status, refused.errors?.[0]?.extensions?.permission]).toEqual([403, 'users:write']);
    const admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    expect((await graphqlPost(server, admin, SYNC)).data).toEqual({ syncBackend: { outcome: 'APPLIED' } });
    const events = await graphqlPost(
      server,
      admin,
      '{ auditEvents(first: 5, kind: "admin.change") { edges { node { permission role details } } } }',
    );
    const { auditEvents } = events.data as {
      auditEvents: { edges: Array<{ node: { permission: string; role: string; details: string } }> };
    };
    const sync = auditEvents.edges.map((e) => e.node).find((n) => JSON.parse(n.details).action === 'directory.sync');
    expect(sync).toMatchObject({ permission: 'users:write', role: 'admin' });
    expect(JSON.parse(sync!.details)).toMatchObject({ backend: 'corp', outcome: 'applied' });
  });
});
