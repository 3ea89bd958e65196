import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost, tokenRequest } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

interface Registered {
  client: { clientId: string; roles: string[] };
  clientSecret: string;
}

/**
 * docs/decisions.md "Resource servers": a client with the role `introspect` may introspect any client's tokens
 * and nothing else; the admin API refuses it. The role is given through the admin API.
 */
describe.each(databaseKinds)('the introspect role on %s', (kind) => {
  let server: TestServer;
  let adminToken: string;

  const REGISTER = 'mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId roles } clientSecret } }';
  const UPDATE = 'mutation($id: ID!, $roles: [String!]) { updateClient(clientId: $id, input: { roles: $roles }) { clientId roles } }';

  async function register(name: string, roles?: string[]): Promise<Registered> {
    const res = await graphqlPost(server, adminToken, REGISTER, {
      input: { name, redirectUris: [], grantTypes: ['CLIENT_CREDENTIALS'], ...(roles ? { roles } : {}) },
    });
    expect(res.errors).toBeUndefined();
    return res.data!.registerClient as Registered;
  }

  const introspect = async (caller: Registered, token: string) =>
    (
      await postForm(`${server.url}/oauth/v20/introspect`, { token }, { authorization: basic(caller.client.clientId, caller.clientSecret) })
    ).json();

  const ownToken = async (c: Registered) =>
    (await tokenRequest(server, { grant_type: 'client_credentials' }, { authorization: basic(c.client.clientId, c.clientSecret) }))
      .access_token;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('pat', 'pat-password-1');
    adminToken = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
  });
  afterAll(() => server.stop());

  test("a resource server registered with roles: [introspect] reads other clients' tokens, users' included", async () => {
    const api = await register('Orders API', ['introspect']);
    expect(api.client.roles).toEqual(['introspect']);
    const app = await register('Batch job');
    const appToken = await ownToken(app);
    expect(await introspect(api, appToken)).toMatchObject({ active: true, client_id: app.client.clientId });
    const userToken = (await adminCliToken(server, 'pat', 'pat-password-1')).access_token;
    expect(await introspect(api, userToken)).toMatchObject({ active: true, client_id: 'admin-cli', username: 'pat' });
    // Without the role, a client still sees only its own tokens.
    const other = await register('Other app');
    expect(await introspect(other, appToken)).toEqual({ active: false });
  });

  test('updateClient gives and takes the role', async () => {
    const api = await register('Billing API');
    const appToken = await ownToken(await register('Billing job'));
    expect(await introspect(api, appToken)).toEqual({ active: false });
    const given = await graphqlPost(server, adminToken, UPDATE, { id: api.client.clientId, roles: ['introspect'] });
    expect(given.data!.updateClient).toEqual({ clientId: api.client.clientId, roles: ['introspect'] });
    expect(await introspect(api, appToken)).toMatchObject({ active: true });
    await graphqlPost(server, adminToken, UPDATE, { id: api.client.clientId, roles: [] });
    expect(await introspect(api, appToken)).toEqual({ active: false });
  });

  test('and nothing else: the admin API is FORBIDDEN to its token, and it cannot revoke tokens it did not get', async () => {
    const api = await register('Reports API', ['introspect']);
    const apiToken = await ownToken(api);
    for (const query of [
      '{ clients { totalCount } }',
      'mutation { createUser(input: { username: "sneaky", password: "sneaky-password-1", roles: ["admin"] }) { id } }',
    ]) {
      const res = await graphqlPost(server, apiToken, query);
      expect(res.status).toBe(403);
      expect(res.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect(res.data ?? null).toBeNull();
    }
    const app = await register('Reports job');
    const appToken = await ownToken(app);
    const revoke = await postForm(
      `${server.url}/oauth/v20/revoke`,
      { token: appToken },
      { authorization: basic(api.client.clientId, api.clientSecret) },
    );
    expect(revoke.status).toBe(400);
    expect(await introspect(app, appToken)).toMatchObject({ active: true });
  });
});
