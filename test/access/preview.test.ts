import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { DOMParser } from '@xmldom/xmldom';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { adminCliToken, graphqlPost, tokenRequest } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { basic, get } from '../helpers/http.ts';
import { SamlBrowser, type Hop } from '../helpers/saml-browser.ts';
import { startSamlSp, type TestSp } from '../helpers/saml-sp.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

const REDIRECT = 'http://localhost:3000/cb';
const SAML_NS = 'urn:oasis:names:tc:SAML:2.0:assertion';
const PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';

/** Every scope the test client may ask for: its registered ones, and offline_access since it may refresh. */
const ALL_SCOPES = 'openid profile email groups offline_access';

/**
 * Claims that belong to one token or one sign-in, not to the user: the preview has none of them (it
 * shows `sub` and what the user and the application's rules give).
 */
const PROTOCOL_CLAIMS = ['iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'nonce', 'at_hash', 'c_hash', 'auth_time', 'amr', 'acr', 'sid', 'azp'];
/** A JWT access token's own: whom it is for, its client and its scope. */
const ACCESS_TOKEN_CLAIMS = [...PROTOCOL_CLAIMS, 'client_id', 'scope', 'cnf'];

const without = (claims: Record<string, unknown>, names: readonly string[]) =>
  Object.fromEntries(Object.entries(claims).filter(([k]) => !names.includes(k)));

const PREVIEW = `query($app: ID!, $user: ID!) {
  previewAccess(applicationId: $app, userId: $user) {
    allowed reason idTokenClaims userinfoClaims accessTokenClaims samlNameId samlAttributes { name nameFormat friendlyName values }
  }
}`;

interface Preview {
  allowed: boolean;
  reason: string;
  idTokenClaims: Record<string, unknown> | null;
  userinfoClaims: Record<string, unknown> | null;
  accessTokenClaims: Record<string, unknown> | null;
  samlNameId: string | null;
  samlAttributes: Array<{ name: string; nameFormat: string; friendlyName: string | null; values: string[] }> | null;
}

interface Registered {
  clientId: string;
  clientSecret: string;
}

/**
 * docs/access-and-claims.md: `previewAccess` answers what
 * the real id_token, userinfo, JWT access token and SAML assertion then say, for the same application
 * and user, and whether and why the access policy lets the user in.
 */
describe.each(databaseKinds)('the admin preview of an application on %s', (kind) => {
  let server: TestServer;
  let admin: string;
  let idpCert: string;
  let mira: string;
  let nils: string;
  /** Assigned to staff; roles, and mappings of several sources, targets and a scope condition; JWT access tokens. */
  let wiki: Registered;
  const sps: TestSp[] = [];

  async function gql<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>): Promise<T> {
    const answer = await graphqlPost(server, admin, query, variables);
    if (answer.errors) throw new Error(`${query}: ${JSON.stringify(answer.errors)}`);
    return answer.data as T;
  }

  const preview = async (app: string, user: string) => (await gql<{ previewAccess: Preview }>(PREVIEW, { app, user })).previewAccess;

  async function register(input: Record<string, unknown>): Promise<Registered> {
    const { registerClient } = await gql<{ registerClient: { client: { clientId: string }; clientSecret: string } }>(
      `mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId } clientSecret } }`,
      {
        i: {
          name: 'Wiki',
          redirectUris: [REDIRECT],
          grantTypes: ['AUTHORIZATION_CODE', 'REFRESH_TOKEN', 'PASSWORD'],
          scopes: ['openid', 'profile', 'email', 'groups'],
          ...input,
        },
      },
    );
    return { clientId: registerClient.client.clientId, clientSecret: registerClient.clientSecret };
  }

  const createUser = async (input: Record<string, unknown>) =>
    (await gql<{ createUser: { id: string } }>(`mutation($i: CreateUserInput!) { createUser(input: $i) { id } }`, { i: input })).createUser
      .id;

  /** The id_token's claims, its signature checked against the server's keys. */
  async function verified(idToken: string): Promise<Record<string, unknown>> {
    const jwks = createRemoteJWKSet(new URL(`${server.url}/connect/v10/jwks`));
    return (await jwtVerify(idToken, jwks, { issuer: server.url })).payload as Record<string, unknown>;
  }

  const userinfo = async (accessToken: string) => {
    const res = await get(`${server.url}/connect/v10/userinfo`, {}, { authorization: `Bearer ${accessToken}` });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  };

  beforeAll(async () => {
    server = await startTestServer(kind);
    admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    const metadata = await (await fetch(`${server.url}/saml/v20/metadata`)).text();
    const b64 = /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!;
    idpCert = `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
    mira = await createUser({
      username: 'mira',
      password: 'mira-password-1',
      email: 'mira@example.org',
      displayName: 'Mira Preview',
      groups: ['staff', 'team-a', 'aws-123456789012-Admin'],
      attributes: { department: 'Sales', employeeNumber: 'E-7', badges: ['b-1', 'b-2'] },
    });
    nils = await createUser({ username: 'nils', password: 'nils-password-1', groups: ['contractors'] });
    wiki = await register({
      accessTokenFormat: 'JWT',
      access: { mode: 'ASSIGNED', groups: ['staff'] },
      applicationRoles: [
        { name: 'editor', groups: ['team-a'] },
        { name: 'viewer', groups: ['staff'] },
        { name: 'owner', users: [nils] },
      ],
      claimMappings: [
        { claim: 'department', source: 'ATTRIBUTE', attribute: 'department' },
        { claim: 'badges', source: 'ATTRIBUTE', attribute: 'badges', multiValued: true, targets: ['USERINFO'] },
        { claim: 'aws', source: 'GROUPS', groupFilter: '^aws-(\\d{12})-(\\w+)$', value: '$1:$2', targets: ['ID_TOKEN', 'ACCESS_TOKEN'] },
        {
          claim: 'employee',
          source: 'ATTRIBUTE',
          attribute: 'employeeNumber',
          scope: 'profile',
          targets: ['ID_TOKEN', 'USERINFO', 'ACCESS_TOKEN'],
        },
        { claim: 'tier', source: 'STATIC', value: 'gold', targets: ['ACCESS_TOKEN'] },
      ],
    });
  });
  afterAll(async () => {
    for (const sp of sps) await sp.stop();
    await server?.stop();
  });

  test('for a client: the id_token, userinfo and JWT access token of the code flow say what the preview says', async () => {
    const seen = await preview(wiki.clientId, mira);
    expect(seen).toMatchObject({ allowed: true, reason: 'group:staff', samlNameId: null, samlAttributes: null });
    // What the preview shows, by itself: the standard claims of every scope, the roles, the mappings of each target.
    expect(seen.idTokenClaims).toEqual({
      sub: mira,
      name: 'Mira Preview',
      preferred_username: 'mira',
      email: 'mira@example.org',
      email_verified: true,
      groups: ['staff', 'team-a', 'aws-123456789012-Admin'],
      roles: ['editor', 'viewer'],
      department: 'Sales',
      aws: ['123456789012:Admin'],
      employee: 'E-7',
    });
    expect(seen.userinfoClaims).toEqual({
      ...without(seen.idTokenClaims!, ['aws']),
      badges: ['b-1', 'b-2'],
    });
    expect(seen.accessTokenClaims).toEqual({
      sub: mira,
      roles: ['editor', 'viewer'],
      aws: ['123456789012:Admin'],
      employee: 'E-7',
      tier: 'gold',
    });

    const client = { ...wiki, redirectUri: REDIRECT };
    const q = await obtainCode(new Browser(server), client, 'mira', 'mira-password-1', { scope: ALL_SCOPES, nonce: 'n-preview' });
    const res = await exchangeCode(server, client, q.code!);
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as { id_token: string; access_token: string; scope: string };
    expect(tokens.scope.split(' ').sort()).toEqual(ALL_SCOPES.split(' ').sort());
    const idToken = await verified(tokens.id_token);
    expect(idToken.nonce).toBe('n-preview');
    expect(without(idToken, PROTOCOL_CLAIMS)).toEqual(seen.idTokenClaims);
    expect(await userinfo(tokens.access_token)).toEqual(seen.userinfoClaims);
    expect(without(decodeJwt(tokens.access_token), ACCESS_TOKEN_CLAIMS)).toEqual(seen.accessTokenClaims);
  });

  test('for a client: the password grant issues what the preview says too', async () => {
    const seen = await preview(wiki.clientId, mira);
    const tokens = await tokenRequest(
      server,
      { grant_type: 'password', username: 'mira', password: 'mira-password-1', scope: ALL_SCOPES },
      { authorization: basic(wiki.clientId, wiki.clientSecret) },
    );
    expect(without(await verified(tokens.id_token!), PROTOCOL_CLAIMS)).toEqual(seen.idTokenClaims);
    expect(await userinfo(tokens.access_token)).toEqual(seen.userinfoClaims);
    expect(without(decodeJwt(tokens.access_token), ACCESS_TOKEN_CLAIMS)).toEqual(seen.accessTokenClaims);
  });

  test('a change to the user shows in the preview and in the next tokens alike', async () => {
    await gql(`mutation($id: ID!) { updateUser(id: $id, input: { attributes: { department: "Research", badges: [] } }) { id } }`, {
      id: mira,
    });
    await gql(`mutation($id: ID!) { setUserGroups(id: $id, groups: ["staff"]) { id } }`, { id: mira });
    const seen = await preview(wiki.clientId, mira);
    expect(seen.idTokenClaims).toMatchObject({ department: 'Research', roles: ['viewer'], aws: [], groups: ['staff'] });
    expect(seen.idTokenClaims!.employee).toBeUndefined();
    expect(seen.userinfoClaims!.badges).toEqual([]);
    const tokens = await tokenRequest(
      server,
      { grant_type: 'password', username: 'mira', password: 'mira-password-1', scope: ALL_SCOPES },
      { authorization: basic(wiki.clientId, wiki.clientSecret) },
    );
    expect(without(await verified(tokens.id_token!), PROTOCOL_CLAIMS)).toEqual(seen.idTokenClaims);
    expect(await userinfo(tokens.access_token)).toEqual(seen.userinfoClaims);
    expect(without(decodeJwt(tokens.access_token), ACCESS_TOKEN_CLAIMS)).toEqual(seen.accessTokenClaims);
  });

  test('allowed and reason follow the access policy: a named user, a group, not assigned, a disabled user, everyone', async () => {
    // nils holds no staff group: refused, and the password grant agrees.
    expect(await preview(wiki.clientId, nils)).toMatchObject({ allowed: false, reason: 'not_assigned' });
    const grant = await fetch(`${server.url}/oauth/v20/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(wiki.clientId, wiki.clientSecret) },
      body: new URLSearchParams({ grant_type: 'password', username: 'nils', password: 'nils-password-1', scope: 'openid' }).toString(),
    });
    expect(grant.status).toBe(400);
    expect(((await grant.json()) as { error: string }).error).toBe('invalid_grant');

    const named = await register({ access: { mode: 'ASSIGNED', users: [nils], groups: ['staff'] } });
    expect(await preview(named.clientId, nils)).toMatchObject({ allowed: true, reason: 'user' });
    const byBackend = await register({ access: { mode: 'ASSIGNED', backends: ['local'] } });
    expect(await preview(byBackend.clientId, nils)).toMatchObject({ allowed: true, reason: 'backend:local' });
    const open = await register({});
    expect(await preview(open.clientId, nils)).toMatchObject({ allowed: true, reason: 'everyone' });
    // Without roles or mappings: the standard claims alone.
    expect((await preview(open.clientId, nils)).idTokenClaims).toEqual({
      sub: nils,
      name: 'nils',
      preferred_username: 'nils',
      groups: ['contractors'],
    });

    await gql(`mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { id } }`, { id: nils });
    expect(await preview(open.clientId, nils)).toMatchObject({ allowed: false, reason: 'disabled' });
    await gql(`mutation($id: ID!) { updateUser(id: $id, input: { disabled: false }) { id } }`, { id: nils });
  });

  test('for a SAML service provider: the NameID and attributes of a real assertion, by entity ID or by its id', async () => {
    const sp = await startSamlSp({ idpUrl: server.url, idpCert, identifierFormat: PERSISTENT });
    sps.push(sp);
    await gql(
      `mutation($xml: String, $input: SamlServiceProviderInput) { registerSamlServiceProvider(metadataXml: $xml, input: $input) { entityId } }`,
      {
        xml: sp.metadataXml,
        input: {
          nameIdFormat: 'PERSISTENT',
          access: { mode: 'ASSIGNED', groups: ['STAFF'] },
          roles: [{ name: 'reader', groups: ['staff'] }],
          attributeMappings: [
            { name: 'urn:oid:2.5.4.11', friendlyName: 'ou', source: 'ATTRIBUTE', attribute: 'department' },
            { name: 'roles', nameFormat: 'BASIC', source: 'ROLES' },
            { name: 'username', nameFormat: 'UNSPECIFIED', source: 'USERNAME' },
          ],
        },
      },
    );
    const seen = await preview(sp.entityId, mira);
    expect(seen).toMatchObject({
      allowed: true,
      reason: 'group:STAFF',
      idTokenClaims: null,
      userinfoClaims: null,
      accessTokenClaims: null,
    });
    expect(seen.samlNameId).toEqual(expect.any(String));
    const department = (
      await gql<{ user: { attributes: { department: string } } }>(`query($id: ID!) { user(id: $id) { attributes } }`, { id: mira })
    ).user.attributes.department;
    expect(seen.samlAttributes).toEqual([
      { name: 'urn:oid:2.5.4.11', nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri', friendlyName: 'ou', values: [department] },
      { name: 'roles', nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic', friendlyName: null, values: ['reader'] },
      { name: 'username', nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:unspecified', friendlyName: null, values: ['mira'] },
    ]);
    // Its id names it as well as its entity ID does.
    const spId = (await server.ctx.samlProviders.find(sp.entityId))!.id;
    expect(await preview(spId, mira)).toEqual(seen);
    expect(await preview(sp.entityId, nils)).toMatchObject({ allowed: false, reason: 'not_assigned' });

    // The real sign-on: the assertion carries that NameID and those attributes, as they are listed.
    const browser = new SamlBrowser();
    let page: Hop = await browser.follow(await browser.get(`${sp.url}/login`));
    page = await browser.submit(page, { username: 'mira', password: 'mira-password-1' });
    const response = htmlForms(page.html)[0]?.fields.SAMLResponse;
    if (page.status !== 200 || !response) throw new Error(`expected the form-post page, got ${page.status}: ${page.html.slice(0, 600)}`);
    const doc = new DOMParser().parseFromString(Buffer.from(response, 'base64').toString('utf8'), 'text/xml');
    const nameId = doc.getElementsByTagNameNS(SAML_NS, 'NameID')[0]!;
    expect(nameId.getAttribute('Format')).toBe(PERSISTENT);
    expect(nameId.textContent).toBe(seen.samlNameId);
    const list = doc.getElementsByTagNameNS(SAML_NS, 'Attribute');
    const sent = Array.from({ length: list.length }, (_, i) => {
      const a = list[i]!;
      const values = a.getElementsByTagNameNS(SAML_NS, 'AttributeValue');
      return {
        name: a.getAttribute('Name'),
        nameFormat: a.getAttribute('NameFormat'),
        friendlyName: a.hasAttribute('FriendlyName') ? a.getAttribute('FriendlyName') : null,
        values: Array.from({ length: values.length }, (_, j) => values[j]!.textContent ?? ''),
      };
    });
    expect(sent).toEqual(seen.samlAttributes);
    // node-saml validated it and reads the same NameID.
    const acs = JSON.parse((await browser.submit(page)).html) as { ok: boolean; profile?: { nameID: string } };
    expect(acs).toMatchObject({ ok: true, profile: { nameID: seen.samlNameId } });
  });

  test('an unknown application or user is NOT_FOUND naming the argument; only admins may preview', async () => {
    const noApp = await graphqlPost(server, admin, PREVIEW, { app: 'no-such-app', user: mira });
    expect(noApp.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND', field: 'applicationId' });
    expect(noApp.errors?.[0]?.message).toContain('no-such-app');
    const noUser = await graphqlPost(server, admin, PREVIEW, { app: wiki.clientId, user: 'no-such-user' });
    expect(noUser.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND', field: 'userId' });

    const plain = (await adminCliToken(server, 'nils', 'nils-password-1')).access_token;
    const answer = await graphqlPost(server, plain, PREVIEW, { app: wiki.clientId, user: mira });
    expect(answer.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(answer.data?.previewAccess ?? null).toBeNull();
  });
});
