import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { GraphQLClient, gql } from 'graphql-request';
import { databaseKinds } from '../helpers/databases.ts';
import { postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

interface Users {
  users: { totalCount: number; edges: Array<{ node: { username: string } }> };
}
interface Clients {
  clients: { totalCount: number; edges: Array<{ node: { name: string } }> };
}

const USERS = gql`query($search: String) { users(first: 100, search: $search) { totalCount edges { node { username } } } }`;
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
    const res = await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'password',
      client_id: 'admin-cli',
      username: 'admin',
      password: ADMIN_PASSWORD,
    });
    admin = new GraphQLClient(`${server.url}/graphql`, {
      headers: { authorization: `Bearer ${((await res.json()) as { access_token: string }).access_token}` },
    });
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
