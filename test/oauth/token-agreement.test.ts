import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost, tokenRequest } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Whether an access token is good is decided once, by the token service: `/me`, userinfo,
 * introspection and the admin API give the same answer about one token, each in its own shape, when
 * its client's `oauthEnabled` is turned off after issue, when its user is disabled, and when its
 * client is deleted (docs/endpoints.md `app_unsupport_oauth`: such a client may not use these endpoints at all).
 */

/** What each endpoint said about a token, reduced to "accepted" or the refusal in its own words. */
interface Verdicts {
  me: string;
  userinfo: string;
  introspection: string;
  graphql: string;
}

const ACCEPTED: Verdicts = { me: 'accepted', userinfo: 'accepted', introspection: 'accepted', graphql: 'accepted' };

/** A refusal: 401 with `WWW-Authenticate: Bearer error=…` at me/userinfo, inactive, UNAUTHENTICATED. */
const refused = (bearerError: string): Verdicts => ({
  me: `401 ${bearerError}`,
  userinfo: `401 ${bearerError}`,
  introspection: 'inactive',
  graphql: '401 UNAUTHENTICATED',
});

describe.each(databaseKinds)('me, userinfo, introspection and /graphql agree on a token, on %s', (kind) => {
  let server: TestServer;
  let adminToken: string;
  /** A resource server that may introspect every client's tokens (docs/decisions.md "Resource servers"). */
  let resourceServer: { clientId: string; clientSecret: string | null };

  beforeAll(async () => {
    server = await startTestServer(kind);
    adminToken = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    resourceServer = await server.client({
      name: 'Orders API',
      redirectUris: [],
      grantTypes: ['client_credentials'],
      roles: ['introspect'],
    });
  });
  afterAll(() => server?.stop());

  /** An application registered for the admin API (docs/admin-api.md), and an admin user's token from it. */
  async function adminAppToken(
    username: string,
    accessTokenFormat: 'opaque' | 'jwt' = 'opaque',
  ): Promise<{ clientId: string; userId: string; token: string }> {
    const userId = await server.user(username, `${username}-password-1`, { roles: ['admin'], email: `${username}@example.org` });
    const app = await server.client({ grantTypes: ['password'], scopes: ['openid', 'profile', 'email', 'admin'], accessTokenFormat });
    const answer = await tokenRequest(
      server,
      { grant_type: 'password', username, password: `${username}-password-1`, scope: 'openid profile email admin' },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );
    return { clientId: app.clientId, userId, token: answer.access_token };
  }

  async function bearerVerdict(path: string, token: string): Promise<string> {
    const res = await get(`${server.url}${path}`, {}, { authorization: `Bearer ${token}` });
    if (res.status === 200) return 'accepted';
    const error = /error="([^"]+)"/.exec(res.headers.get('www-authenticate') ?? '')?.[1];
    return `${res.status} ${error}`;
  }

  async function verdicts(token: string): Promise<Verdicts> {
    const introspected = (await (
      await postForm(
        `${server.url}/oauth/v20/introspect`,
        { token },
        { authorization: basic(resourceServer.clientId, resourceServer.clientSecret!) },
      )
    ).json()) as { active: boolean };
    const graphql = await graphqlPost(server, token, '{ clients { totalCount } }');
    return {
      me: await bearerVerdict('/api/oauth/v20/me', token),
      userinfo: await bearerVerdict('/connect/v10/userinfo', token),
      introspection: introspected.active ? 'accepted' : 'inactive',
      graphql: graphql.status === 200 && !graphql.errors ? 'accepted' : `${graphql.status} ${graphql.errors?.[0]?.extensions?.code}`,
    };
  }

  const admin = async (query: string, variables: Record<string, unknown>) => {
    const res = await graphqlPost(server, adminToken, query, variables);
    expect(res.errors).toBeUndefined();
  };

  test('a good token is accepted by all four', async () => {
    const { token } = await adminAppToken('ada');
    expect(await verdicts(token)).toEqual(ACCEPTED);
  });

  test("(a) its client's oauthEnabled turned off after issue: refused by all four, and accepted again when it is back on", async () => {
    const { clientId, token } = await adminAppToken('bea');
    expect(await verdicts(token)).toEqual(ACCEPTED);
    const UPDATE = 'mutation($id: ID!, $on: Boolean!) { updateClient(clientId: $id, input: { oauthEnabled: $on }) { oauthEnabled } }';
    await admin(UPDATE, { id: clientId, on: false });
    expect(await verdicts(token)).toEqual(refused('app_unsupport_oauth'));
    await admin(UPDATE, { id: clientId, on: true });
    expect(await verdicts(token)).toEqual(ACCEPTED);
  });

  test('(a) the same for a JWT access token (RFC 9068): its signature is still good, the token is not', async () => {
    const { clientId, token } = await adminAppToken('bo', 'jwt');
    expect(token.split('.')).toHaveLength(3);
    expect(await verdicts(token)).toEqual(ACCEPTED);
    await admin('mutation($id: ID!) { updateClient(clientId: $id, input: { oauthEnabled: false }) { oauthEnabled } }', { id: clientId });
    expect(await verdicts(token)).toEqual(refused('app_unsupport_oauth'));
  });

  test('(b) its user disabled through the admin API: refused by all four', async () => {
    const { userId, token } = await adminAppToken('cleo');
    await admin('mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { disabled } }', { id: userId });
    // Disabling revokes the user's tokens at once (docs/decisions.md "Sessions end with the credentials").
    expect(await verdicts(token)).toEqual(refused('invalid_access_token'));
  });

  test('(b) its user marked disabled while the token survives (as a directory sync records it): refused by all four', async () => {
    const { userId, token } = await adminAppToken('dina');
    await server.sql('users').where({ id: userId }).update({ disabled: true });
    expect(await verdicts(token)).toEqual(refused('invalid_access_token'));
  });

  test('(c) its client deleted: refused by all four', async () => {
    const { clientId, token } = await adminAppToken('edda');
    await admin('mutation($id: ID!) { deleteClient(clientId: $id) }', { id: clientId });
    expect(await verdicts(token)).toEqual(refused('invalid_access_token'));
  });

  test("a refresh token: introspection says what the refresh grant does when its client's oauthEnabled is turned off", async () => {
    await server.user('fay', 'fay-password-1');
    const app = await server.client({ grantTypes: ['password', 'refresh_token'] });
    const auth = { authorization: basic(app.clientId, app.clientSecret!) };
    const { refresh_token: refresh } = await tokenRequest(
      server,
      { grant_type: 'password', username: 'fay', password: 'fay-password-1' },
      auth,
    );
    const introspect = async () =>
      (
        (await (
          await postForm(
            `${server.url}/oauth/v20/introspect`,
            { token: refresh! },
            { authorization: basic(resourceServer.clientId, resourceServer.clientSecret!) },
          )
        ).json()) as { active: boolean }
      ).active;
    expect(await introspect()).toBe(true);
    await admin('mutation($id: ID!) { updateClient(clientId: $id, input: { oauthEnabled: false }) { oauthEnabled } }', {
      id: app.clientId,
    });
    expect(await introspect()).toBe(false);
    const refused = await postForm(`${server.url}/oauth/v20/token`, { grant_type: 'refresh_token', refresh_token: refresh }, auth);
    expect(((await refused.json()) as { error: string }).error).toBe('app_unsupport_oauth');
  });

  test('a client_credentials token: introspection and /graphql judge it, me and userinfo want a user', async () => {
    const service = await server.client({ redirectUris: [], grantTypes: ['client_credentials'], roles: ['admin'] });
    const auth = { authorization: basic(service.clientId, service.clientSecret!) };
    const { access_token: token } = await tokenRequest(server, { grant_type: 'client_credentials' }, auth);
    expect(await verdicts(token)).toEqual({ ...refused('invalid_access_token'), introspection: 'accepted', graphql: 'accepted' });
    await admin('mutation($id: ID!) { updateClient(clientId: $id, input: { oauthEnabled: false }) { oauthEnabled } }', {
      id: service.clientId,
    });
    expect(await verdicts(token)).toEqual(refused('app_unsupport_oauth'));
  });
});
