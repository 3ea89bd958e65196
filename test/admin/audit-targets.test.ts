import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

interface Event {
  kind: string;
  userId: string | null;
  clientId: string | null;
  actorUserId: string | null;
  details: string;
}

/**
 * Every admin mutation's audit event names what it changed (docs/decisions.md's last row): the client for a
 * client change, the user for a user change, both for a revocation scoped to both. `client.register`
 * once named nobody; this is the test that would have caught it.
 */
describe.each(databaseKinds)('admin changes name their target in the audit trail on %s', (kind) => {
  let server: TestServer;
  let token: string;
  let adminId: string;

  const call = async <T>(query: string, variables?: Record<string, unknown>): Promise<T> => {
    const answer = await graphqlPost(server, token, query, variables);
    if (answer.errors) throw new Error(JSON.stringify(answer.errors));
    return answer.data as T;
  };

  /** The admin.change event of `action` whose target is the last made. */
  const eventOf = async (action: string): Promise<Event> => {
    const page = await call<{ auditEvents: { edges: Array<{ node: Event }> } }>(
      `query { auditEvents(first: 100, kind: "admin.change") { edges { node { kind userId clientId actorUserId details } } } }`,
    );
    const found = page.auditEvents.edges.map((e) => e.node).filter((e) => JSON.parse(e.details).action === action);
    expect(found.length).toBeGreaterThan(0);
    return found[0]!;
  };

  beforeAll(async () => {
    server = await startTestServer(kind);
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    adminId = (await server.sql('users').where({ username: 'admin' }).first('id')).id as string;
  });
  afterAll(() => server.stop());

  test('each client mutation names the client', async () => {
    const { registerClient } = await call<{ registerClient: { client: { clientId: string } } }>(
      `mutation { registerClient(input: { name: "Audited", redirectUris: ["https://app.example/cb"] }) { client { clientId } } }`,
    );
    const clientId = registerClient.client.clientId;
    await call(`mutation($id: ID!) { updateClient(clientId: $id, input: { name: "Audited 2" }) { clientId } }`, { id: clientId });
    await call(`mutation($id: ID!) { rotateClientSecret(clientId: $id) { clientSecret } }`, { id: clientId });
    await call(`mutation($id: ID!) { revokeTokens(clientId: $id) }`, { id: clientId });
    await call(`mutation($id: ID!) { deleteClient(clientId: $id) }`, { id: clientId });
    for (const action of ['client.register', 'client.update', 'client.rotate_secret', 'tokens.revoke', 'client.delete']) {
      const event = await eventOf(action);
      expect({ action, clientId: event.clientId, actorUserId: event.actorUserId }).toEqual({ action, clientId, actorUserId: adminId });
    }
  });

  test('each user mutation names the user', async () => {
    const { createUser } = await call<{ createUser: { id: string } }>(
      `mutation { createUser(input: { username: "audited-user", password: "audited-password-1" }) { id } }`,
    );
    const userId = createUser.id;
    await call(`mutation($id: ID!) { updateUser(id: $id, input: { displayName: "Audited User" }) { id } }`, { id: userId });
    await call(`mutation($id: ID!) { setUserPassword(id: $id, password: "another-password-2") }`, { id: userId });
    await call(`mutation($id: ID!) { revokeTokens(userId: $id) }`, { id: userId });
    await call(`mutation($id: ID!) { deleteUser(id: $id) }`, { id: userId });
    for (const action of ['user.create', 'user.update', 'user.set_password', 'tokens.revoke', 'user.delete']) {
      const event = await eventOf(action);
      expect({ action, userId: event.userId, actorUserId: event.actorUserId }).toEqual({ action, userId, actorUserId: adminId });
    }
  });
});
