import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { adminCliToken, graphqlPost, tokenRequest } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

const REDIRECT = 'http://localhost:3000/cb';

const REGISTER = `mutation($i: RegisterClientInput!) {
  registerClient(input: $i) { client { clientId applicationRoles { name } claimMappings { claim targets } } clientSecret }
}`;

interface Registered {
  clientId: string;
  clientSecret: string;
}

/**
 * docs/access-and-claims.md "Application roles" and "Claims and attributes per application", as an
 * application reads them: a stock OIDC library (openid-client) reading the real id_token and userinfo,
 * a resource server verifying a JWT access token and introspecting one.
 */
describe.each(databaseKinds)('what each OAuth client is told on %s', (kind) => {
  let server: TestServer;
  let admin: string;
  let miraId: string;
  /** Roles, mapped claims of every source, every target, and a scope condition. */
  let wiki: Registered;
  /** Roles of its own, no mappings. */
  let other: Registered;
  /** Neither roles nor mappings: today's claims. */
  let plain: Registered;

  async function register(input: Record<string, unknown>): Promise<Registered> {
    const answer = await graphqlPost(server, admin, REGISTER, {
      i: { name: 'App', redirectUris: [REDIRECT], grantTypes: ['AUTHORIZATION_CODE', 'REFRESH_TOKEN', 'PASSWORD'], ...input },
    });
    expect(answer.errors).toBeUndefined();
    const { client, clientSecret } = answer.data!.registerClient as { client: { clientId: string }; clientSecret: string };
    return { clientId: client.clientId, clientSecret };
  }

  async function gql(query: string, variables?: Record<string, unknown>): Promise<Record<string, unknown>> {
    const answer = await graphqlPost(server, admin, query, variables);
    if (answer.errors) throw new Error(`${query}: ${JSON.stringify(answer.errors)}`);
    return answer.data!;
  }

  const configFor = (c: Registered) =>
    oidc.discovery(new URL(server.url), c.clientId, c.clientSecret, undefined, { execute: [oidc.allowInsecureRequests] });

  /** The code flow with PKCE, state and nonce, as openid-client runs it; the tokens it validated. */
  async function codeFlow(c: Registered, scope: string, user = 'mira', password = 'mira-password-1') {
    const config = await configFor(c);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const back = await new Browser(server).signIn(Object.fromEntries(url.searchParams), user, password);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.headers.get('location')!), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    return { config, tokens, claims, userinfo };
  }

  beforeAll(async () => {
    server = await startTestServer(kind);
    admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const created = await gql(`mutation($i: CreateUserInput!) { createUser(input: $i) { id groups attributes } }`, {
      i: {
        username: 'mira',
        password: 'mira-password-1',
        email: 'mira@example.org',
        displayName: 'Mira',
        groups: ['eng-frontend', 'eng-backend', 'staff', 'finance'],
        attributes: { department: 'Research', badges: ['b-7', 'b-9'] },
      },
    });
    const mira = created.createUser as { id: string; groups: string[]; attributes: Record<string, unknown> };
    expect(mira.groups).toEqual(expect.arrayContaining(['eng-frontend', 'staff']));
    expect(mira.attributes).toEqual({ department: 'Research', badges: ['b-7', 'b-9'] });
    miraId = mira.id;
    await gql(`mutation($i: CreateUserInput!) { createUser(input: $i) { id } }`, {
      i: { username: 'nils', password: 'nils-password-1', groups: ['staff'] },
    });

    wiki = await register({
      name: 'Wiki',
      scopes: ['openid', 'profile', 'email', 'hr'],
      accessTokenFormat: 'JWT',
      applicationRoles: [
        { name: 'editor', groups: ['eng-frontend'] },
        { name: 'owner', users: [miraId] },
        { name: 'auditor', groups: ['audit'] },
      ],
      claimMappings: [
        // Groups filtered and rewritten: eng-frontend → frontend.
        { claim: 'teams', source: 'GROUPS', groupFilter: '^eng-(\\w+)$', multiValued: true },
        // Only with the hr scope.
        { claim: 'department', source: 'ATTRIBUTE', attribute: 'department', scope: 'hr' },
        { claim: 'tenant', source: 'STATIC', value: 'acme', targets: ['ID_TOKEN', 'USERINFO', 'ACCESS_TOKEN', 'INTROSPECTION'] },
        { claim: 'login', source: 'USERNAME', targets: ['USERINFO'] },
        { claim: 'api_user', source: 'USERNAME', targets: ['ACCESS_TOKEN'] },
        { claim: 'badges', source: 'ATTRIBUTE', attribute: 'badges', multiValued: true, targets: ['INTROSPECTION'] },
        // Names introspection gives a meaning of its own: the protocol's value wins.
        { claim: 'username', source: 'STATIC', value: 'spoofed', targets: ['INTROSPECTION'] },
      ],
    });
    other = await register({ name: 'Payroll', applicationRoles: [{ name: 'clerk', groups: ['finance'] }] });
    plain = await register({ name: 'Plain' });
  });
  afterAll(() => server.stop());

  test('the id_token and userinfo carry the roles of this application and its mapped claims, each where it is aimed', async () => {
    const { claims, userinfo } = await codeFlow(wiki, 'openid profile hr');
    expect(claims.sub).toBe(miraId);
    expect(claims.aud).toBe(wiki.clientId);
    expect(claims.roles).toEqual(['editor', 'owner']);
    expect(claims.teams).toEqual(['frontend', 'backend']);
    expect(claims.department).toBe('Research');
    expect(claims.tenant).toBe('acme');
    // Aimed elsewhere: not in the id_token.
    for (const name of ['login', 'api_user', 'badges']) expect(claims).not.toHaveProperty(name);

    expect(userinfo).toEqual({
      sub: miraId,
      name: 'Mira',
      preferred_username: 'mira',
      roles: ['editor', 'owner'],
      teams: ['frontend', 'backend'],
      department: 'Research',
      tenant: 'acme',
      login: 'mira',
    });
  });

  test('a mapping with a scope condition is left out when the grant lacks the scope', async () => {
    const { claims, userinfo } = await codeFlow(wiki, 'openid profile');
    expect(claims).not.toHaveProperty('department');
    expect(userinfo).not.toHaveProperty('department');
    expect(claims.tenant).toBe('acme');
    expect(userinfo.roles).toEqual(['editor', 'owner']);
  });

  test("another client sees its own roles only, and a client with neither roles nor mappings today's claims", async () => {
    const payroll = await codeFlow(other, 'openid profile');
    expect(payroll.claims.roles).toEqual(['clerk']);
    expect(payroll.userinfo.roles).toEqual(['clerk']);
    for (const name of ['teams', 'tenant', 'department', 'login']) {
      expect(payroll.claims).not.toHaveProperty(name);
      expect(payroll.userinfo).not.toHaveProperty(name);
    }

    const bare = await codeFlow(plain, 'openid profile email');
    expect(bare.claims).not.toHaveProperty('roles');
    expect(bare.userinfo).toEqual({
      sub: miraId,
      name: 'Mira',
      preferred_username: 'mira',
      email: 'mira@example.org',
      email_verified: true,
    });
  });

  test('a user who holds none of the roles gets an empty roles claim; a single-valued claim with no value is left out', async () => {
    const { claims, userinfo } = await codeFlow(wiki, 'openid profile hr', 'nils', 'nils-password-1');
    expect(claims.roles).toEqual([]);
    expect(userinfo.roles).toEqual([]);
    expect(userinfo.teams).toEqual([]);
    expect(userinfo).not.toHaveProperty('department');
  });

  test('the JWT access token carries the ACCESS_TOKEN claims, and introspection the INTROSPECTION ones, under the protocol claims', async () => {
    const { config, tokens } = await codeFlow(wiki, 'openid profile hr');
    const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, { issuer: server.ctx.config.publicUrl });
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload).toMatchObject({ sub: miraId, client_id: wiki.clientId, roles: ['editor', 'owner'], tenant: 'acme', api_user: 'mira' });
    for (const name of ['teams', 'department', 'login', 'badges']) expect(payload).not.toHaveProperty(name);

    const introspected = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(introspected).toMatchObject({
      active: true,
      client_id: wiki.clientId,
      sub: miraId,
      username: 'mira',
      roles: ['editor', 'owner'],
      tenant: 'acme',
      badges: ['b-7', 'b-9'],
    });
    for (const name of ['teams', 'department', 'login', 'api_user']) expect(introspected).not.toHaveProperty(name);

    // A resource server with the introspect role sees the token's client's claims, not its own.
    const api = await register({ name: 'API', grantTypes: ['CLIENT_CREDENTIALS'], roles: ['introspect'] });
    const seen = await postForm(
      `${server.url}/oauth/v20/introspect`,
      { token: tokens.access_token },
      { authorization: basic(api.clientId, api.clientSecret) },
    );
    expect(await seen.json()).toMatchObject({ active: true, client_id: wiki.clientId, roles: ['editor', 'owner'], tenant: 'acme' });
  });

  test('the claims follow the user and the client as they are now: a group taken away, a mapping removed', async () => {
    const tokens = await tokenRequest(
      server,
      { grant_type: 'password', username: 'mira', password: 'mira-password-1', scope: 'openid profile' },
      { authorization: basic(wiki.clientId, wiki.clientSecret) },
    );
    const userinfo = async (): Promise<Record<string, unknown>> => {
      const res = await fetch(`${server.url}/connect/v10/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };
    expect(await userinfo()).toMatchObject({ roles: ['editor', 'owner'], teams: ['frontend', 'backend'], tenant: 'acme' });

    await gql('mutation($id: ID!, $g: [String!]!) { setUserGroups(id: $id, groups: $g) { groups } }', {
      id: miraId,
      g: ['eng-backend', 'staff', 'finance'],
    });
    await gql('mutation($c: ID!, $i: UpdateClientInput!) { updateClient(clientId: $c, input: $i) { clientId } }', {
      c: wiki.clientId,
      i: { claimMappings: [{ claim: 'teams', source: 'GROUPS', groupFilter: '^eng-(\\w+)$', multiValued: true }] },
    });
    const now = await userinfo();
    expect(now.roles).toEqual(['owner']);
    expect(now.teams).toEqual(['backend']);
    expect(now).not.toHaveProperty('tenant');
    expect(now).not.toHaveProperty('login');
  });

  test('a claim name OpenID Connect reserves is refused, naming the mapping', async () => {
    for (const claim of ['sub', 'iss', 'nonce', 'client_id', 'scope']) {
      const answer = await graphqlPost(server, admin, REGISTER, {
        i: { name: 'Bad', redirectUris: [REDIRECT], claimMappings: [{ claim, source: 'STATIC', value: 'x' }] },
      });
      expect(answer.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'claimMappings.0.claim' });
      expect(answer.data?.registerClient ?? null).toBeNull();
    }
    const update = await graphqlPost(
      server,
      admin,
      'mutation($c: ID!, $i: UpdateClientInput!) { updateClient(clientId: $c, input: $i) { clientId } }',
      {
        c: plain.clientId,
        i: {
          claimMappings: [
            { claim: 'tenant', source: 'STATIC', value: 'x' },
            { claim: 'aud', source: 'USERNAME' },
          ],
        },
      },
    );
    expect(update.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'claimMappings.1.claim' });
    // Nothing changed: the plain client still gets no mapped claim.
    const bare = await codeFlow(plain, 'openid');
    expect(bare.userinfo).toEqual({ sub: miraId });
  });
});
