import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost, scopesOf, tokenRequest, type GraphQLAnswer, type TokenAnswer } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode, type CodeFlowClient } from '../helpers/flow.ts';
import { basic, locationQuery } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * docs/admin-api.md: a user's token is for the admin API only when it was issued for it (to admin-cli,
 * admin-console, or a client registered with the scope `admin`) and its scope holds `admin`. An
 * application a user signs in to never holds that user's admin rights.
 */
describe.each(databaseKinds)('admin API scope on %s', (kind) => {
  let server: TestServer;
  let counter = 0;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('plain', 'plain-password-1');
  });
  afterAll(() => server.stop());

  const CREATE_USER = 'mutation($u: String!) { createUser(input: { username: $u, password: "created-password-1" }) { id username } }';
  const createUser = (token: string, username = `made-${kind}-${++counter}`) => graphqlPost(server, token, CREATE_USER, { u: username });

  /** The admin API (through the real admin's admin-cli token) says whether `username` exists. */
  async function userExists(username: string): Promise<boolean> {
    const admin = await adminCliToken(server, 'admin', ADMIN_PASSWORD);
    const res = await graphqlPost(server, admin.access_token, 'query($s: String) { users(search: $s) { edges { node { username } } } }', {
      s: username,
    });
    expect(res.errors).toBeUndefined();
    const edges = (res.data!.users as { edges: Array<{ node: { username: string } }> }).edges;
    return edges.some((e) => e.node.username === username);
  }

  function expectForbidden(res: GraphQLAnswer): void {
    expect(res.status).toBe(403);
    expect(res.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(res.data ?? null).toBeNull();
  }

  /** Signs `username` in to `client` through the browser flow and exchanges the code. */
  async function codeFlowToken(
    client: CodeFlowClient,
    username: string,
    password: string,
    extra: Record<string, string> = {},
  ): Promise<TokenAnswer> {
    const q = await obtainCode(new Browser(server), client, username, password, extra);
    expect(q.code).toBeDefined();
    const res = await exchangeCode(server, client, q.code!);
    const body = (await res.json()) as TokenAnswer;
    expect(res.status).toBe(200);
    return body;
  }

  test("admin-cli: the admin's password-grant token holds the admin scope with no scope asked and runs createUser; a non-admin's has no admin scope and is FORBIDDEN (403)", async () => {
    const admin = await adminCliToken(server, 'admin', ADMIN_PASSWORD);
    expect(scopesOf(admin)).toContain('admin');
    const made = await createUser(admin.access_token, `cli-made-${kind}`);
    expect(made.errors).toBeUndefined();
    expect(made.status).toBe(200);
    expect((made.data!.createUser as { username: string }).username).toBe(`cli-made-${kind}`);

    const plain = await adminCliToken(server, 'plain', 'plain-password-1');
    expect(scopesOf(plain)).not.toContain('admin');
    const name = `plain-made-${kind}`;
    expectForbidden(await createUser(plain.access_token, name));
    expect(await userExists(name)).toBe(false);
  });

  test('a token the admin got by signing in to an ordinary web client is FORBIDDEN at /graphql, and so is its refreshed successor', async () => {
    const web = await server.client(); // default scopes: openid profile email
    const signedIn = await codeFlowToken(web, 'admin', ADMIN_PASSWORD);
    expect(scopesOf(signedIn)).not.toContain('admin');
    const first = `web-made-${kind}`;
    expectForbidden(await createUser(signedIn.access_token, first));
    expect(await userExists(first)).toBe(false);

    expect(signedIn.refresh_token).toBeDefined();
    const refreshed = await tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: signedIn.refresh_token! },
      { authorization: basic(web.clientId, web.clientSecret!) },
    );
    expect(scopesOf(refreshed)).not.toContain('admin');
    const second = `web-refreshed-made-${kind}`;
    expectForbidden(await createUser(refreshed.access_token, second));
    expect(await userExists(second)).toBe(false);

    // Nor can that client ask for the scope: it is not the client's to give.
    const ask = await new Browser(server).authorize({
      client_id: web.clientId,
      redirect_uri: web.redirectUri,
      response_type: 'code',
      scope: 'admin',
      state: 'adm',
    });
    expect(ask.status).toBe(302);
    expect(locationQuery(ask)).toMatchObject({ error: 'invalid_scope', state: 'adm' });
  });

  test('a client registered with the admin scope: the admin gets a working admin token with scope=openid admin; a non-admin user signing in to it gets no admin scope', async () => {
    const console_ = await server.client({ scopes: ['openid', 'admin'], grantTypes: ['authorization_code', 'refresh_token'] });

    const admin = await codeFlowToken(console_, 'admin', ADMIN_PASSWORD, { scope: 'openid admin' });
    expect(scopesOf(admin)).toContain('admin');
    const made = await createUser(admin.access_token, `console-made-${kind}`);
    expect(made.errors).toBeUndefined();
    expect((made.data!.createUser as { username: string }).username).toBe(`console-made-${kind}`);

    const plain = await codeFlowToken(console_, 'plain', 'plain-password-1', { scope: 'openid admin' });
    expect(scopesOf(plain)).not.toContain('admin');
    const name = `console-plain-made-${kind}`;
    expectForbidden(await createUser(plain.access_token, name));
    expect(await userExists(name)).toBe(false);
    // The refreshed token of the non-admin cannot gain it either.
    const refreshed = await tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: plain.refresh_token! },
      { authorization: basic(console_.clientId, console_.clientSecret!) },
    );
    expect(scopesOf(refreshed)).not.toContain('admin');
    expectForbidden(await createUser(refreshed.access_token));

    // A service account (client_credentials, the client's own admin role) still works: it acts for itself.
    const robot = await server.client({ redirectUris: [], grantTypes: ['client_credentials'], roles: ['admin'] });
    const cc = await tokenRequest(
      server,
      { grant_type: 'client_credentials' },
      { authorization: basic(robot.clientId, robot.clientSecret!) },
    );
    const robotMade = await createUser(cc.access_token, `robot-made-${kind}`);
    expect(robotMade.errors).toBeUndefined();
    expect((robotMade.data!.createUser as { username: string }).username).toBe(`robot-made-${kind}`);
  });
});
