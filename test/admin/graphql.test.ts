import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ClientError, GraphQLClient, gql } from 'graphql-request';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { basic, get, locationQuery, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

interface Reg {
  registerClient: {
    client: { clientId: string; name: string; grantTypes: string[]; scopes: string[]; confidential: boolean; createdAt: string };
    clientSecret: string | null;
  };
}

const REGISTER = gql`
  mutation Register($input: RegisterClientInput!) {
    registerClient(input: $input) {
      client { clientId name grantTypes scopes confidential ssoEnabled oauthEnabled requireConsent createdAt updatedAt }
      clientSecret
    }
  }
`;

/** The admin API through a stock GraphQL client (graphql-request), on both databases. */
describe.each(databaseKinds)('GraphQL admin API on %s', (kind) => {
  let server: TestServer;
  let admin: GraphQLClient;
  let adminId: string;

  async function passwordToken(username: string, password: string): Promise<string> {
    const res = await postForm(`${server.url}/oauth/v20/token`, { grant_type: 'password', client_id: 'admin-cli', username, password });
    expect(res.status).toBe(200);
    return ((await res.json()) as { access_token: string }).access_token;
  }

  const clientWith = (token?: string) =>
    new GraphQLClient(`${server.url}/graphql`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  async function expectGraphQLError(
    p: Promise<unknown>,
    code: string,
    status?: number,
  ): Promise<{ message: string; extensions?: Record<string, unknown> }> {
    try {
      await p;
    } catch (err) {
      expect(err).toBeInstanceOf(ClientError);
      const e = err as ClientError;
      if (status) expect(e.response.status).toBe(status);
      const first = e.response.errors![0]!;
      expect(first.extensions?.code).toBe(code);
      return first as { message: string; extensions?: Record<string, unknown> };
    }
    throw new Error(`expected a ${code} error`);
  }

  beforeAll(async () => {
    server = await startTestServer(kind);
    admin = clientWith(await passwordToken('admin', ADMIN_PASSWORD));
    adminId = (await server.ctx.users.findByUsername('local', 'admin'))!.id;
    await server.user('plain', 'plain-password-1');
  });
  afterAll(() => server.stop());

  test('no token is UNAUTHENTICATED (401); a non-admin token is FORBIDDEN (403)', async () => {
    await expectGraphQLError(clientWith().request(gql`{ clients { totalCount } }`), 'UNAUTHENTICATED', 401);
    await expectGraphQLError(clientWith('forged').request(gql`{ clients { totalCount } }`), 'UNAUTHENTICATED', 401);
    const plain = clientWith(await passwordToken('plain', 'plain-password-1'));
    await expectGraphQLError(plain.request(gql`{ clients { totalCount } }`), 'FORBIDDEN', 403);
  });

  test('a registered client is usable in the code flow at once; its secret is shown once', async () => {
    const { registerClient } = await admin.request<Reg>(REGISTER, {
      input: { name: 'Wiki', redirectUris: ['https://wiki.example.com/cb'] },
    });
    expect(registerClient.client).toMatchObject({
      name: 'Wiki',
      grantTypes: ['AUTHORIZATION_CODE', 'REFRESH_TOKEN'],
      scopes: ['openid', 'profile', 'email'],
      confidential: true,
    });
    expect(registerClient.clientSecret).toMatch(/^[\w-]{43}$/);
    const c = {
      clientId: registerClient.client.clientId,
      clientSecret: registerClient.clientSecret,
      redirectUri: 'https://wiki.example.com/cb',
    };
    const q = await obtainCode(new Browser(server), c, 'plain', 'plain-password-1');
    expect((await exchangeCode(server, c, q.code!)).status).toBe(200);

    const read = await admin.request<{ client: Record<string, unknown> }>(
      gql`query($id: ID!) { client(clientId: $id) { clientId name redirectUris } }`,
      { id: c.clientId },
    );
    expect(read.client).toEqual({ clientId: c.clientId, name: 'Wiki', redirectUris: ['https://wiki.example.com/cb'] });
    const stored = await server.sql('clients').where({ client_id: c.clientId }).first();
    expect(JSON.stringify(stored)).not.toContain(registerClient.clientSecret!);
  });

  test('validation: BAD_USER_INPUT naming the field, nothing written', async () => {
    const before = await admin.request<{ clients: { totalCount: number } }>(gql`{ clients { totalCount } }`);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: '', redirectUris: ['https://a.example/cb'] }, 'name'],
      [{ name: 'x', redirectUris: ['not a url'] }, 'redirectUris'],
      [{ name: 'x', redirectUris: ['https://a.example/cb#frag'] }, 'redirectUris'],
      [{ name: 'x', redirectUris: ['http://a.example/cb'] }, 'redirectUris'],
      [{ name: 'x', redirectUris: ['https://a.example/cb'], accessTokenTtl: -5 }, 'accessTokenTtl'],
      [{ name: 'x', redirectUris: ['https://a.example/cb'], refreshTokenTtl: 0 }, 'refreshTokenTtl'],
      [{ name: 'x'.repeat(201), redirectUris: ['https://a.example/cb'] }, 'name'],
    ];
    for (const [input, field] of cases) {
      const e = await expectGraphQLError(admin.request(REGISTER, { input }), 'BAD_USER_INPUT');
      expect(e.message).toContain(field);
      expect(e.extensions?.field).toBe(field);
    }
    // Native apps: custom schemes and loopback http are fine.
    await admin.request(REGISTER, {
      input: { name: 'native', redirectUris: ['com.example.app:/cb', 'http://127.0.0.1:7000/cb'], confidential: false },
    });
    const after = await admin.request<{ clients: { totalCount: number } }>(gql`{ clients { totalCount } }`);
    expect(after.clients.totalCount).toBe(before.clients.totalCount + 1);
  });

  test('cursor pagination with totalCount and search', async () => {
    for (let i = 0; i < 5; i++) await admin.request(REGISTER, { input: { name: `Paged ${i}`, redirectUris: ['https://p.example/cb'] } });
    const names: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const page: {
        clients: { edges: Array<{ node: { name: string } }>; pageInfo: { hasNextPage: boolean; endCursor: string }; totalCount: number };
      } = await admin.request(
        gql`query($after: String) { clients(first: 2, after: $after, search: "paged") { edges { cursor node { name } } pageInfo { hasNextPage endCursor } totalCount } }`,
        { after },
      );
      expect(page.clients.totalCount).toBe(5);
      names.push(...page.clients.edges.map((e) => e.node.name));
      pages++;
      if (!page.clients.pageInfo.hasNextPage) break;
      after = page.clients.pageInfo.endCursor;
    }
    expect(pages).toBe(3);
    expect(names).toEqual(['Paged 0', 'Paged 1', 'Paged 2', 'Paged 3', 'Paged 4']);
    await expectGraphQLError(admin.request(gql`{ clients(after: "garbage") { totalCount } }`), 'BAD_USER_INPUT');
  });

  test('update enforces ssoEnabled and oauthEnabled; a rotated secret is refused; a deleted client loses its tokens', async () => {
    const { registerClient } = await admin.request<Reg>(REGISTER, {
      input: { name: 'Ops', redirectUris: ['https://ops.example/cb'], grantTypes: ['AUTHORIZATION_CODE', 'PASSWORD'] },
    });
    const id = registerClient.client.clientId;
    const oldSecret = registerClient.clientSecret!;

    await admin.request(gql`mutation($id: ID!) { updateClient(clientId: $id, input: { ssoEnabled: false }) { ssoEnabled } }`, { id });
    const page = await get(`${server.url}/oauth/v20/authorize`, {
      client_id: id,
      redirect_uri: 'https://ops.example/cb',
      response_type: 'code',
      state: 's',
    });
    expect(locationQuery(page).error).toBe('app_unsupport_sso');

    const rotated = await admin.request<{ rotateClientSecret: { clientSecret: string } }>(
      gql`mutation($id: ID!) { rotateClientSecret(clientId: $id) { clientSecret } }`,
      { id },
    );
    const grant = (secret: string) =>
      postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: 'plain', password: 'plain-password-1' },
        { authorization: basic(id, secret) },
      );
    expect((await grant(oldSecret)).status).toBe(401);
    const ok = await grant(rotated.rotateClientSecret.clientSecret);
    expect(ok.status).toBe(200);
    const { access_token } = (await ok.json()) as { access_token: string };

    await admin.request(gql`mutation($id: ID!) { updateClient(clientId: $id, input: { oauthEnabled: false }) { oauthEnabled } }`, { id });
    expect(((await (await grant(rotated.rotateClientSecret.clientSecret)).json()) as { error: string }).error).toBe('app_unsupport_oauth');
    expect(((await (await get(`${server.url}/api/oauth/v20/me`, { access_token })).json()) as { error: string }).error).toBe(
      'app_unsupport_oauth',
    );

    expect(await admin.request(gql`mutation($id: ID!) { deleteClient(clientId: $id) }`, { id })).toEqual({ deleteClient: true });
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token })).status).toBe(401);
    expect(await admin.request(gql`mutation($id: ID!) { deleteClient(clientId: $id) }`, { id })).toEqual({ deleteClient: false });
    await expectGraphQLError(admin.request(gql`mutation { updateClient(clientId: "nope", input: { name: "x" }) { name } }`), 'NOT_FOUND');
  });

  test('allowPlainPkce: false by default, which refuses PKCE plain; updateClient turns it on', async () => {
    const reg = await admin.request<{ registerClient: { client: { clientId: string; allowPlainPkce: boolean } } }>(
      gql`mutation { registerClient(input: { name: "Old app", redirectUris: ["https://old.example/cb"], confidential: false }) { client { clientId allowPlainPkce } } }`,
    );
    const { clientId, allowPlainPkce } = reg.registerClient.client;
    expect(allowPlainPkce).toBe(false);
    const ask = () =>
      get(`${server.url}/oauth/v20/authorize`, {
        client_id: clientId,
        redirect_uri: 'https://old.example/cb',
        response_type: 'code',
        state: 'p',
        code_challenge: 'c'.repeat(43),
        code_challenge_method: 'plain',
      });
    expect(locationQuery(await ask()).error).toBe('invalid_request');

    const updated = await admin.request<{ updateClient: { allowPlainPkce: boolean } }>(
      gql`mutation($id: ID!) { updateClient(clientId: $id, input: { allowPlainPkce: true }) { allowPlainPkce } }`,
      { id: clientId },
    );
    expect(updated.updateClient.allowPlainPkce).toBe(true);
    expect((await ask()).status).toBe(200); // the login page: the request is valid now
  });

  test('users: create, update, admin role, disable, set password, search, delete; tokens revoked', async () => {
    const created = await admin.request<{
      createUser: { id: string; username: string; backend: string; roles: string[]; readOnly: boolean };
    }>(
      gql`mutation { createUser(input: { username: "ivan", password: "ivan-password-1", email: "ivan@example.org", displayName: "Ivan" }) { id username backend roles readOnly disabled createdAt } }`,
    );
    const id = created.createUser.id;
    expect(created.createUser).toMatchObject({ username: 'ivan', backend: 'local', roles: [], readOnly: false });
    await expectGraphQLError(
      admin.request(gql`mutation { createUser(input: { username: "ivan", password: "another-password" }) { id } }`),
      'BAD_USER_INPUT',
    );
    await expectGraphQLError(
      admin.request(gql`mutation { createUser(input: { username: "short", password: "123" }) { id } }`),
      'BAD_USER_INPUT',
    );

    const token = await passwordToken('ivan', 'ivan-password-1');
    let ivan = clientWith(token);
    await expectGraphQLError(ivan.request(gql`{ users { totalCount } }`), 'FORBIDDEN', 403);
    await admin.request(gql`mutation($id: ID!) { updateUser(id: $id, input: { roles: ["admin"] }) { roles } }`, { id });
    // A token issued before the role was granted does not carry the admin scope: a new sign-in does.
    await expectGraphQLError(ivan.request(gql`{ users { totalCount } }`), 'FORBIDDEN', 403);
    ivan = clientWith(await passwordToken('ivan', 'ivan-password-1'));
    const seen = await ivan.request<{ users: { edges: Array<{ node: { username: string } }> } }>(
      gql`{ users(search: "IVAN@") { edges { node { username } } } }`,
    );
    expect(seen.users.edges.map((e) => e.node.username)).toEqual(['ivan']);

    await admin.request(gql`mutation($id: ID!) { setUserPassword(id: $id, password: "ivan-password-2") }`, { id });
    await expectGraphQLError(ivan.request(gql`{ users { totalCount } }`), 'UNAUTHENTICATED', 401);
    const fresh = await passwordToken('ivan', 'ivan-password-2');

    await admin.request(gql`mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { disabled } }`, { id });
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: fresh })).status).toBe(401);
    const refused = await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'password',
      client_id: 'admin-cli',
      username: 'ivan',
      password: 'ivan-password-2',
    });
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant');

    expect(await admin.request(gql`mutation($id: ID!) { deleteUser(id: $id) }`, { id })).toEqual({ deleteUser: true });
    expect(await admin.request(gql`query($id: ID!) { user(id: $id) { id } }`, { id })).toEqual({ user: null });
  });

  test('revokeTokens by user, by client, or both; needs one of them', async () => {
    const c = await server.client({ grantTypes: ['password'] });
    const take = async () => {
      const res = await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: 'plain', password: 'plain-password-1' },
        { authorization: basic(c.clientId, c.clientSecret!) },
      );
      return ((await res.json()) as { access_token: string }).access_token;
    };
    const plainId = (await server.ctx.users.findByUsername('local', 'plain'))!.id;
    const t1 = await take();
    const { revokeTokens } = await admin.request<{ revokeTokens: number }>(
      gql`mutation($u: ID, $c: ID) { revokeTokens(userId: $u, clientId: $c) }`,
      { u: plainId, c: c.clientId },
    );
    expect(revokeTokens).toBe(1);
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: t1 })).status).toBe(401);
    const t2 = await take();
    await admin.request(gql`mutation($c: ID) { revokeTokens(clientId: $c) }`, { c: c.clientId });
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: t2 })).status).toBe(401);
    await expectGraphQLError(admin.request(gql`mutation { revokeTokens }`), 'BAD_USER_INPUT');
  });

  test('a client with the admin role is a service account through client_credentials', async () => {
    const { registerClient } = await admin.request<Reg>(REGISTER, {
      input: { name: 'robot', redirectUris: [], grantTypes: ['CLIENT_CREDENTIALS'], scopes: ['admin'], roles: ['admin'] },
    });
    const res = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'client_credentials' },
      { authorization: basic(registerClient.client.clientId, registerClient.clientSecret!) },
    );
    const robot = clientWith(((await res.json()) as { access_token: string }).access_token);
    const backends = await robot.request<{ identityBackends: unknown[] }>(gql`{ identityBackends { id plugin order up } }`);
    expect(backends.identityBackends).toEqual([{ id: 'local', plugin: 'database', order: 0, up: true }]);
  });

  test('the audit trail records sign-ins, failures, token issues and admin changes with their actor', async () => {
    await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'password',
      client_id: 'admin-cli',
      username: 'plain',
      password: 'wrong-password',
    });
    const changes = await admin.request<{
      auditEvents: {
        edges: Array<{ node: { kind: string; actorUserId: string | null; details: string; ip: string } }>;
        totalCount: number;
      };
    }>(gql`{ auditEvents(first: 100, kind: "admin.change") { edges { node { kind actorUserId details ip at } } totalCount } }`);
    expect(changes.auditEvents.totalCount).toBeGreaterThan(5);
    const actions = changes.auditEvents.edges.map((e) => JSON.parse(e.node.details).action);
    for (const a of [
      'client.register',
      'client.update',
      'client.rotate_secret',
      'client.delete',
      'user.create',
      'user.update',
      'user.set_password',
      'user.delete',
      'tokens.revoke',
    ]) {
      expect(actions).toContain(a);
    }
    // Changes through the API name their actor and address; the first admin was made by the server
    // itself, and the fixtures' clients through the services as the CLI does: each says so.
    const via = (e: { node: { details: string } }) => JSON.parse(e.node.details).via as string;
    const throughApi = changes.auditEvents.edges.filter((e) => via(e) === 'graphql');
    expect(throughApi.length).toBeGreaterThan(5);
    expect(throughApi.every((e) => e.node.actorUserId === adminId && e.node.ip)).toBe(true);
    expect(changes.auditEvents.edges.every((e) => ['graphql', 'cli', 'system'].includes(via(e)))).toBe(true);
    const kinds = await admin.request<{ auditEvents: { edges: Array<{ node: { kind: string } }> } }>(
      gql`{ auditEvents(first: 100) { edges { node { kind } } } }`,
    );
    const seen = new Set(kinds.auditEvents.edges.map((e) => e.node.kind));
    for (const k of ['login.success', 'login.failure', 'token.issued', 'token.revoked', 'admin.change']) expect(seen).toContain(k);
  });

  test('depth and cost limits; malformed and oversized bodies; CSRF prevention', async () => {
    // Forty aliased pages of a hundred (twice what the whole schema's introspection costs): priced before it runs, and refused.
    const greedy = Array.from({ length: 40 }, (_, i) => `a${i}: clients(first: 100) { edges { node { clientId name } } }`).join(' ');
    const refused = await expectGraphQLError(admin.request(`{ ${greedy} }`), 'GRAPHQL_VALIDATION_FAILED', 400);
    expect(refused.message).toMatch(/query cost \d+ exceeds the limit of \d+/);
    const token = await passwordToken('admin', ADMIN_PASSWORD);
    const big = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: `{ clients { totalCount } }`, pad: 'x'.repeat(70 * 1024) }),
    });
    expect(big.status).toBe(413);
    const bad = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: '{nope',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code).toBe('BAD_REQUEST');
    const csrf = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ clients { totalCount } }')}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(csrf.status).toBe(400);
  });
});
