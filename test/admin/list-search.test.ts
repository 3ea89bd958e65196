import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { GraphQLClient, gql } from 'graphql-request';
import { connect, migrate, type Database } from '../../src/db/connect.ts';
import { migrationSource } from '../../src/db/migrations.ts';
import { clientQueries } from '../../src/clients/queries.ts';
import { userQueries } from '../../src/users/queries.ts';
import type { User } from '../../src/users/model.ts';
import { databaseKinds, freshDatabase } from '../helpers/databases.ts';
import { postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

interface Users {
  users: { totalCount: number; edges: Array<{ node: { username: string } }> };
}
interface Clients {
  clients: { totalCount: number; edges: Array<{ node: { name: string } }> };
}

const USERS = gql`query($search: String) { users(first: 100, search: $search) { totalCount edges { node { username } } } }`;
const USER_PAGE = gql`query($search: String, $after: String) {
  users(first: 100, search: $search, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { node { username } } }
}`;

/** The GraphQL admin API as the built-in admin, through the admin CLI client's password grant. */
async function adminClient(server: TestServer): Promise<GraphQLClient> {
  const res = await postForm(`${server.url}/oauth/v20/token`, {
    grant_type: 'password',
    client_id: 'admin-cli',
    username: 'admin',
    password: ADMIN_PASSWORD,
  });
  return new GraphQLClient(`${server.url}/graphql`, {
    headers: { authorization: `Bearer ${((await res.json()) as { access_token: string }).access_token}` },
  });
}

/** A database user as the admin API would make one, `n` ms after `base` (the lists' order). */
const userRow = (username: string, displayName: string | null, base: number, n: number): User => ({
  id: randomUUID(),
  backend: 'local',
  externalId: randomUUID(),
  username,
  email: `${username}@corp.example`,
  emailVerified: true,
  displayName,
  passwordHash: null,
  roles: [],
  groups: [],
  attributes: {},
  disabled: false,
  disabledBy: null,
  createdAt: base + n,
  updatedAt: base + n,
});

/** Writes users straight into the database, as an import or a directory sync would, beside the server. */
async function insertUsers(database: Database, users: User[]): Promise<void> {
  const q = userQueries(database);
  for (let i = 0; i < users.length; i += 50) await Promise.all(users.slice(i, i + 50).map((u) => q.insert(u)));
}
const CLIENTS = gql`query($search: String) { clients(first: 100, search: $search) { totalCount edges { node { name } } } }`;

/**
 * The admin lists' search by text finds what a part of a name, email or id names, in any case, through
 * every change of the records: on SQLite it goes through a trigram index kept by triggers
 * (migrations/20261205000000_list_search_indexes.ts), on PostgreSQL through trigram indexes of the LIKE.
 */
describe.each(databaseKinds)('admin list search on %s', (kind) => {
  let server: TestServer;
  let admin: GraphQLClient;
  const users = async (search: string) => (await admin.request<Users>(USERS, { search })).users;
  const clients = async (search: string) => (await admin.request<Clients>(CLIENTS, { search })).clients;
  const names = (c: Users['users']) => c.edges.map((e) => e.node.username).sort();

  beforeAll(async () => {
    server = await startTestServer(kind);
    admin = await adminClient(server);
  });
  afterAll(() => server.stop());

  test('users: by part of the username, email or display name; renamed and deleted users follow', async () => {
    const create = gql`mutation($input: CreateUserInput!) { createUser(input: $input) { id } }`;
    const made: Record<string, string> = {};
    for (const [username, email, displayName] of [
      ['olivia.garcia', 'olivia@corp.example', 'Olivia García'],
      ['liam.garcia', 'LIAM@Corp.Example', 'Liam Garcia'],
      ['noah.smith', 'noah@other.example', 'Noah "100%" Smith'],
    ] as const) {
      made[username] = (
        await admin.request<{ createUser: { id: string } }>(create, {
          input: { username, email, displayName, password: 'list-search-password-1' },
        })
      ).createUser.id;
    }
    expect(names(await users('GARCIA'))).toEqual(['liam.garcia', 'olivia.garcia']);
    expect((await users('garcia')).totalCount).toBe(2);
    expect(names(await users('corp.exam'))).toEqual(['liam.garcia', 'olivia.garcia']);
    expect(names(await users('"100%"'))).toEqual(['noah.smith']);
    expect(names(await users('0%'))).toEqual(['noah.smith']);
    // Under three characters there is no trigram: the search reads the table, and finds the same.
    expect(names(await users('ah'))).toEqual(['noah.smith']);

    const update = gql`mutation($id: ID!, $input: UpdateUserInput!) { updateUser(id: $id, input: $input) { id } }`;
    await admin.request(update, { id: made['noah.smith'], input: { displayName: 'Noah Okafor' } });
    expect(names(await users('okafor'))).toEqual(['noah.smith']);
    expect((await users('100%')).totalCount).toBe(0);

    await admin.request(gql`mutation($id: ID!) { deleteUser(id: $id) }`, { id: made['olivia.garcia'] });
    expect(names(await users('garcia'))).toEqual(['liam.garcia']);
    expect((await users('garcia')).totalCount).toBe(1);
  });

  test('clients: by part of the name or the client id; renamed and deleted clients follow', async () => {
    const register = gql`mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId } } }`;
    const ids: string[] = [];
    for (const name of ['Payroll EU', 'payroll US', 'Wiki']) {
      const r = await admin.request<{ registerClient: { client: { clientId: string } } }>(register, {
        input: { name, redirectUris: ['https://app.example.com/cb'] },
      });
      ids.push(r.registerClient.client.clientId);
    }
    expect((await clients('PAYROLL')).totalCount).toBe(2);
    expect((await clients(ids[2]!.slice(4, 20))).edges.map((e) => e.node.name)).toEqual(['Wiki']);

    await admin.request(gql`mutation($id: ID!, $input: UpdateClientInput!) { updateClient(clientId: $id, input: $input) { clientId } }`, {
      id: ids[2],
      input: { name: 'Payroll wiki' },
    });
    expect((await clients('payroll')).totalCount).toBe(3);
    await admin.request(gql`mutation($id: ID!) { deleteClient(clientId: $id) }`, { id: ids[0] });
    expect((await clients('payroll')).edges.map((e) => e.node.name).sort()).toEqual(['Payroll wiki', 'payroll US']);
  });
});

/**
 * Many matches and few: a search's totalCount is exactly the rows its pages list, page after page in
 * creation order, whichever way the page is read (src/db/text-search.ts reads the order's index when
 * 2,000 rows or more match, and sorts the matches below that).
 */
describe.each(databaseKinds)('admin list search over thousands of users on %s', (kind) => {
  let server: TestServer;
  let admin: GraphQLClient;
  let database: Database;
  const expected: string[] = [];

  beforeAll(async () => {
    server = await startTestServer(kind);
    admin = await adminClient(server);
    database = connect(server.db.url);
    // 2,600 users whose name holds "bulk", among 400 that do not, created out of name order.
    const base = Date.now() - 3_600_000;
    const rows: User[] = [];
    for (let n = 0; n < 3000; n++) {
      const i = (n * 7919) % 3000;
      const username = i < 2600 ? `bulk.${i}` : `other.${i}`;
      rows.push(userRow(username, i % 2 ? `Person ${i}` : null, base, n));
      if (i < 2600) expected.push(username);
    }
    await insertUsers(database, rows);
  });
  afterAll(async () => {
    await database.knex.destroy();
    await server.stop();
  });

  /** Every page of a search, following endCursor: the names in list order and each page's totalCount. */
  async function allPages(search: string): Promise<{ names: string[]; totals: Set<number> }> {
    const names: string[] = [];
    const totals = new Set<number>();
    let after: string | null = null;
    for (;;) {
      const {
        users,
      }: {
        users: {
          totalCount: number;
          pageInfo: { hasNextPage: boolean; endCursor: string | null };
          edges: Array<{ node: { username: string } }>;
        };
      } = await admin.request(USER_PAGE, { search, after });
      totals.add(users.totalCount);
      names.push(...users.edges.map((e) => e.node.username));
      if (!users.pageInfo.hasNextPage) return { names, totals };
      after = users.pageInfo.endCursor;
    }
  }

  test('a word 2,600 users hold: every one listed once, in creation order, and counted', async () => {
    const { names, totals } = await allPages('BULK.');
    expect(names).toEqual(expected);
    expect([...totals]).toEqual([2600]);
  });

  test('a text 1,111 users hold: listed and counted the same way', async () => {
    const { names, totals } = await allPages('k.1');
    expect(names).toEqual(expected.filter((n) => n.includes('k.1')));
    expect([...totals]).toEqual([1111]);
  });

  test('a word only the newest users hold: every one listed once, in creation order, and counted', async () => {
    // Many matches for the list's size, all at its end: a page is not found in the rows after the
    // cursor where evenly spread matches would be, and is read through the index's matches instead.
    const base = Date.now() + 60_000;
    const late = Array.from({ length: 1000 }, (_, n) => `late.${n}`);
    await insertUsers(
      database,
      late.map((username, n) => userRow(username, null, base, n)),
    );
    const { names, totals } = await allPages('LATE.');
    expect(names).toEqual(late);
    expect([...totals]).toEqual([1000]);
  });

  test('a letter another script cases differently is counted only where it is listed', async () => {
    const base = Date.now();
    // The Kelvin sign (U+212A) folds to "k" under Unicode's case folding; SQLite's lower() leaves it.
    await insertUsers(database, [userRow('kelvin.one', 'Ofi \u212Aofi', base, 0), userRow('kelvin.two', 'Ofi Kofi', base, 1)]);
    const { users } = await admin.request<Users>(USERS, { search: 'kofi' });
    expect(users.totalCount).toBe(users.edges.length);
    expect(users.edges.map((e) => e.node.username)).toContain('kelvin.two');
    // SQLite's LIKE folds ASCII letters only: the Kelvin sign is not a "k" there, in the list or the count.
    if (kind === 'sqlite') expect(users.totalCount).toBe(1);
  });
});

/** A database from before the exact index: the migration indexes every row it finds, and searches find them. */
test.each(databaseKinds)('the exact search index migration indexes existing users on %s', async (kind) => {
  const db = await freshDatabase(kind);
  const database = connect(db.url);
  try {
    await migrate(database);
    await database.knex.migrate.down({ migrationSource, name: '20261208000000_exact_search_index.ts' });
    const base = Date.now();
    await insertUsers(database, [userRow('Mixed.Case', 'Ana MÜLLER', base, 0), userRow('plain', 'Ana Muller', base, 1)]);
    await migrate(database);
    const page = (search: string) => userQueries(database).page({ first: 10, search });
    expect((await page('mixed.c')).edges.map((e) => e.node.username)).toEqual(['Mixed.Case']);
    const ana = await page('ANA M');
    expect(ana.totalCount).toBe(2);
    // Written after the migration: the triggers keep the new index, through every kind of change.
    await userQueries(database).insert(userRow('third', 'ana m.', base, 2));
    expect((await page('ana m')).totalCount).toBe(3);
    expect((await page('muller')).edges.map((e) => e.node.username)).toEqual(['plain']);
    await database.knex('users').where({ username: 'plain' }).update({ display_name: 'ANA MULLER', email: null });
    await database.knex('users').where({ username: 'third' }).delete();
    expect((await page('ana m')).totalCount).toBe(2);
    expect((await page('@corp.example')).edges.map((e) => e.node.username)).toEqual(['Mixed.Case']);
    if (kind === 'sqlite') {
      // FTS5's own check of the index against its content (the view of lowered columns): throws on a mismatch.
      await database.knex.raw("insert into users_search(users_search, rank) values ('integrity-check', 1)");
      await database.knex.raw("insert into clients_search(clients_search, rank) values ('integrity-check', 1)");
    }

    // A client list narrowed to an owner counts with the query, not the index.
    const client = (id: string, name: string, owners: string[]) => ({
      client_id: id,
      name,
      secret_hash: null,
      confidential: false,
      redirect_uris: '["https://app.example.com/cb"]',
      grant_types: '["authorization_code"]',
      scopes: '["openid"]',
      require_consent: false,
      sso_enabled: true,
      oauth_enabled: true,
      owners: JSON.stringify(owners),
      created_at: base,
      updated_at: base,
    });
    await database.knex('clients').insert([client('pay-eu', 'Payroll EU', ['owner-1']), client('pay-us', 'Payroll US', [])]);
    const clients = clientQueries(database);
    expect((await clients.page({ first: 10, search: 'PAYROLL' })).totalCount).toBe(2);
    const owned = await clients.page({ first: 10, search: 'payroll', owner: 'owner-1' });
    expect([owned.totalCount, owned.edges.map((e) => e.node.clientId)]).toEqual([1, ['pay-eu']]);
  } finally {
    await database.knex.destroy();
    await db.drop();
  }
});
