import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { people } from '../fixtures/ldap/directory.ts';
import { adminCliToken, graphqlPost, type GraphQLAnswer } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

interface GqlUser {
  id: string;
  username: string;
  backend: string;
  groups: string[];
  attributes: Record<string, unknown>;
}

const USER_FIELDS = 'id username backend groups attributes';
const CREATE = `mutation($input: CreateUserInput!) { createUser(input: $input) { ${USER_FIELDS} } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateUserInput!) { updateUser(id: $id, input: $input) { ${USER_FIELDS} } }`;
const SET_GROUPS = `mutation($id: ID!, $groups: [String!]!) { setUserGroups(id: $id, groups: $groups) { ${USER_FIELDS} } }`;
const READ = `query($id: ID!) { user(id: $id) { ${USER_FIELDS} } }`;
const GROUPS = `query($first: Int, $after: String, $search: String) {
  groups(first: $first, after: $after, search: $search) { edges { cursor node { name members } } pageInfo { hasNextPage endCursor } totalCount }
}`;

interface GroupPage {
  edges: Array<{ cursor: string; node: { name: string; members: number } }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  totalCount: number;
}

/**
 * Groups and attributes as data through the admin API (docs/access-and-claims.md): a database user's groups and attributes set, checked and audited; other
 * backends' kept by their backend; the groups Latchkey knows, from database users and a real directory.
 */
describe.each(databaseKinds)('groups and attributes in the admin API on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let token: string;

  const gql = (query: string, variables?: Record<string, unknown>) => graphqlPost(server, token, query, variables);

  /** The data of an answer that must have succeeded. */
  function ok<T>(answer: GraphQLAnswer, field: string): T {
    if (answer.errors?.length) throw new Error(`${field} failed: ${JSON.stringify(answer.errors)}`);
    return answer.data![field] as T;
  }

  /** The one error of an answer that must have failed: its code, field and words. */
  function refusal(answer: GraphQLAnswer): { code?: string; field?: string; message: string } {
    expect(answer.errors).toHaveLength(1);
    const e = answer.errors![0]!;
    return { code: e.extensions?.code, field: e.extensions?.field, message: e.message };
  }

  const userCount = async () => ok<{ totalCount: number }>(await gql('{ users { totalCount } }'), 'users').totalCount;

  /** The admin.change events of a user, by action, oldest first. */
  const changes = async (userId: string) =>
    (await server.sql('audit_events').where({ kind: 'admin.change', user_id: userId }).orderBy('id')).map(
      (r) => JSON.parse(String(r.details)) as { action: string; via: string } & Record<string, unknown>,
    );

  /** A directory user signs in (the password grant), so their record holds the groups the directory reports. */
  async function directorySignIn(username: string, password: string): Promise<string> {
    const c = await server.client({ grantTypes: ['password'], scopes: ['openid'] });
    const res = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password, scope: 'openid' },
      { authorization: basic(c.clientId, c.clientSecret!) },
    );
    expect(res.status).toBe(200);
    return (await server.ctx.users.findByUsername('corp', username))!.id;
  }

  beforeAll(async () => {
    slapd = await startSlapd();
    server = await startTestServer(kind, ldapChain(ldapBackendConfig(slapd)));
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
  });
  afterAll(async () => {
    await server?.stop();
    await slapd?.destroy();
  });

  test('createUser keeps groups and attributes; the user reads them back; the creation is audited', async () => {
    const created = ok<GqlUser>(
      await gql(CREATE, {
        input: {
          username: 'dana',
          password: 'dana-password-1',
          // Spaces around a name are dropped, and a name given twice (in any case) is kept once.
          groups: ['team-red', ' team-blue ', 'TEAM-RED'],
          attributes: { department: 'Sales', employeeNumber: '42', languages: ['en', 'fr'] },
        },
      }),
      'createUser',
    );
    expect(created).toMatchObject({
      username: 'dana',
      backend: 'local',
      groups: ['team-red', 'team-blue'],
      attributes: { department: 'Sales', employeeNumber: '42', languages: ['en', 'fr'] },
    });
    expect(ok<GqlUser>(await gql(READ, { id: created.id }), 'user')).toEqual(created);
    expect(await changes(created.id)).toEqual([expect.objectContaining({ action: 'user.create', via: 'graphql' })]);
  });

  test('attributes written as a literal in the query are JSON too', async () => {
    const literal = await gql(`mutation {
      createUser(input: { username: "erin", password: "erin-password-1", attributes: { costCenter: "CC-7", badges: ["a", "b"] } }) { ${USER_FIELDS} }
    }`);
    expect(ok<GqlUser>(literal, 'createUser').attributes).toEqual({ costCenter: 'CC-7', badges: ['a', 'b'] });
  });

  test('createUser refuses bad groups and attributes with BAD_USER_INPUT naming the field, and writes nothing', async () => {
    const before = await userCount();
    const tooMany = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
    const cases: Array<[Record<string, unknown>, 'groups' | 'attributes', string]> = [
      [{ groups: [''] }, 'groups', 'not a group name'],
      [{ groups: ['   '] }, 'groups', 'not a group name'],
      [{ groups: ['x'.repeat(257)] }, 'groups', '1 to 256 characters'],
      [{ groups: ['tab\there'] }, 'groups', 'no control characters'],
      [{ groups: tooMany(201, (i) => `g${i}`) }, 'groups', 'at most 200 groups'],
      [{ attributes: 'Sales' }, 'attributes', 'JSON object'],
      [{ attributes: ['Sales'] }, 'attributes', 'JSON object'],
      [{ attributes: { department: 7 } }, 'attributes', 'department: a value must be a string or a list of strings'],
      [{ attributes: { department: null } }, 'attributes', 'department: a value must be a string'],
      [{ attributes: { department: { name: 'Sales' } } }, 'attributes', 'department: a value must be a string'],
      [{ attributes: { languages: ['en', 3] } }, 'attributes', 'languages: a value must be a string'],
      [{ attributes: { '': 'x' } }, 'attributes', 'not an attribute name'],
      [{ attributes: { ['n'.repeat(129)]: 'x' } }, 'attributes', '1 to 128 characters'],
      [{ attributes: { note: 'v'.repeat(2049) } }, 'attributes', 'note: a value is at most 2048 characters'],
      [{ attributes: { notes: ['ok', 'v'.repeat(2049)] } }, 'attributes', 'notes: a value is at most 2048 characters'],
      [{ attributes: Object.fromEntries(tooMany(65, (i) => [`a${i}`, 'x'])) }, 'attributes', 'at most 64 attributes'],
    ];
    for (const [extra, field, words] of cases) {
      const e = refusal(await gql(CREATE, { input: { username: 'refused', password: 'refused-password-1', ...extra } }));
      expect({ ...e, message: e.message.slice(0, 300) }).toEqual({
        code: 'BAD_USER_INPUT',
        field,
        message: expect.stringContaining(words),
      });
      expect(e.message).toContain(field);
    }
    // The limits themselves are allowed.
    const edge = ok<GqlUser>(
      await gql(CREATE, {
        input: {
          username: 'edge',
          password: 'edge-password-1',
          // (The request body is at most 64 KiB: one of each at its longest.)
          groups: [...tooMany(199, (i) => `edge-${i}`), 'g'.repeat(256)],
          attributes: Object.fromEntries([...tooMany(63, (i) => [`a${i}`, ['x', 'y']]), ['n'.repeat(128), 'v'.repeat(2048)]]),
        },
      }),
      'createUser',
    );
    expect(edge.groups).toHaveLength(200);
    expect(Object.keys(edge.attributes)).toHaveLength(64);
    expect(await userCount()).toBe(before + 1);
    expect(ok<boolean>(await gql('mutation($id: ID!) { deleteUser(id: $id) }', { id: edge.id }), 'deleteUser')).toBe(true);
  });

  test("updateUser sets, replaces and clears a database user's attributes, each change audited", async () => {
    const id = ok<GqlUser>(await gql(CREATE, { input: { username: 'fay', password: 'fay-password-1' } }), 'createUser').id;
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').attributes).toEqual({});

    const set = ok<GqlUser>(await gql(UPDATE, { id, input: { attributes: { title: 'Engineer', teams: ['a'] } } }), 'updateUser');
    expect(set.attributes).toEqual({ title: 'Engineer', teams: ['a'] });
    // Another field's change leaves them alone.
    ok(await gql(UPDATE, { id, input: { displayName: 'Fay' } }), 'updateUser');
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').attributes).toEqual({ title: 'Engineer', teams: ['a'] });
    // Replaced whole, not merged.
    ok(await gql(UPDATE, { id, input: { attributes: { title: 'Lead' } } }), 'updateUser');
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').attributes).toEqual({ title: 'Lead' });

    const bad = refusal(await gql(UPDATE, { id, input: { attributes: { title: ['Lead', false] } } }));
    expect(bad).toMatchObject({ code: 'BAD_USER_INPUT', field: 'attributes' });
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').attributes).toEqual({ title: 'Lead' });

    ok(await gql(UPDATE, { id, input: { attributes: null } }), 'updateUser');
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').attributes).toEqual({});
    expect((await changes(id)).map((c) => c.action)).toEqual(['user.create', 'user.update', 'user.update', 'user.update', 'user.update']);
  });

  test("setUserGroups replaces a database user's groups and audits what was added and removed", async () => {
    const id = ok<GqlUser>(
      await gql(CREATE, { input: { username: 'gus', password: 'gus-password-1', groups: ['team-green', 'team-gold'] } }),
      'createUser',
    ).id;
    const set = ok<GqlUser>(await gql(SET_GROUPS, { id, groups: ['team-gold', 'team-grey', 'Team-Grey'] }), 'setUserGroups');
    expect(set.groups).toEqual(['team-gold', 'team-grey']);
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').groups).toEqual(['team-gold', 'team-grey']);
    expect((await changes(id)).at(-1)).toEqual({
      action: 'user.set_groups',
      via: 'graphql',
      // The permission the admin used and the role that gave it (docs/admin-api.md "Roles and permissions").
      permission: 'users:write',
      role: 'admin',
      added: ['team-grey'],
      removed: ['team-green'],
    });

    const bad = refusal(await gql(SET_GROUPS, { id, groups: ['ok', 'y'.repeat(257)] }));
    expect(bad).toMatchObject({ code: 'BAD_USER_INPUT', field: 'groups' });
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').groups).toEqual(['team-gold', 'team-grey']);

    ok(await gql(SET_GROUPS, { id, groups: [] }), 'setUserGroups');
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').groups).toEqual([]);

    const missing = refusal(await gql(SET_GROUPS, { id: 'no-such-user', groups: ['x'] }));
    expect(missing).toMatchObject({ code: 'NOT_FOUND', field: 'id' });
  });

  test("a directory user's groups and attributes are the directory's: setUserGroups and updateUser(attributes) refuse them", async () => {
    const bob = await directorySignIn('bob', people.bob.password);
    const before = ok<GqlUser>(await gql(READ, { id: bob }), 'user');
    expect([...before.groups].sort()).toEqual(['engineers', 'loop-a', 'loop-b', 'staff']);

    const groups = refusal(await gql(SET_GROUPS, { id: bob, groups: ['team-red'] }));
    expect(groups).toMatchObject({ code: 'BAD_USER_INPUT', field: 'groups' });
    expect(groups.message).toContain('come from that backend');
    expect(groups.message).toContain('"corp"');

    const attributes = refusal(await gql(UPDATE, { id: bob, input: { attributes: { department: 'Sales' } } }));
    expect(attributes).toMatchObject({ code: 'BAD_USER_INPUT', field: 'attributes' });
    expect(attributes.message).toContain('read-only');

    expect(ok<GqlUser>(await gql(READ, { id: bob }), 'user')).toEqual(before);
    expect((await changes(bob)).map((c) => c.action)).not.toContain('user.set_groups');
  });

  test('groups lists the groups of database and directory users with their member counts, by name, searchable and paged', async () => {
    // Database users, one of them spelling a directory group otherwise.
    for (const [username, groups] of [
      ['hal', ['pickers', 'Staff']],
      ['ida', ['pickers']],
    ] as const) {
      ok(await gql(CREATE, { input: { username, password: `${username}-password-1`, groups } }), 'createUser');
    }
    await directorySignIn('alice', people.alice.password);
    await directorySignIn('bob', people.bob.password);

    const all = ok<GroupPage>(await gql(GROUPS, { first: 100 }), 'groups');
    const byName = Object.fromEntries(all.edges.map((e) => [e.node.name, e.node.members]));
    // staff: alice and bob from the directory, hal as "Staff" (one group: names compare without case).
    expect(byName).toMatchObject({ pickers: 2, staff: 3, engineers: 1, 'latchkey-admins': 1, 'loop-a': 1, 'loop-b': 1 });
    expect(byName.Staff).toBeUndefined();
    const names = all.edges.map((e) => e.node.name);
    const key = (name: string) => name.toLowerCase();
    expect(names).toEqual([...names].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)));
    expect(all.totalCount).toBe(names.length);
    expect(all.pageInfo.hasNextPage).toBe(false);

    const loops = ok<GroupPage>(await gql(GROUPS, { search: 'LOOP' }), 'groups');
    expect(loops.edges.map((e) => e.node)).toEqual([
      { name: 'loop-a', members: 1 },
      { name: 'loop-b', members: 1 },
    ]);
    expect(loops.totalCount).toBe(2);

    // Page by page, the same list.
    const paged: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 100; page++) {
      const p: GroupPage = ok<GroupPage>(await gql(GROUPS, { first: 3, after }), 'groups');
      expect(p.totalCount).toBe(names.length);
      paged.push(...p.edges.map((e) => e.node.name));
      if (!p.pageInfo.hasNextPage) break;
      expect(p.edges).toHaveLength(3);
      after = p.pageInfo.endCursor;
    }
    expect(paged).toEqual(names);

    expect(refusal(await gql(GROUPS, { first: 0 }))).toMatchObject({ code: 'BAD_USER_INPUT', field: 'first' });
    expect(refusal(await gql(GROUPS, { first: 101 }))).toMatchObject({ code: 'BAD_USER_INPUT', field: 'first' });
    expect(refusal(await gql(GROUPS, { after: 'not-a-cursor' }))).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
  });

  test('a user who is not an admin cannot read groups or set them', async () => {
    ok(await gql(CREATE, { input: { username: 'plain', password: 'plain-password-1' } }), 'createUser');
    const plain = (await adminCliToken(server, 'plain', 'plain-password-1')).access_token;
    const read = await graphqlPost(server, plain, '{ groups { totalCount } }');
    expect(read.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const id = (await server.ctx.users.findByUsername('local', 'plain'))!.id;
    const write = await graphqlPost(server, plain, SET_GROUPS, { id, groups: ['admins'] });
    expect(write.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(ok<GqlUser>(await gql(READ, { id }), 'user').groups).toEqual([]);
  });
});
