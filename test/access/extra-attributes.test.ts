import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { guidString, people, personDn, PHOTO } from '../fixtures/ldap/directory.ts';
import { adminCliToken, graphqlPost, tokenRequest, type TokenAnswer } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { basic } from '../helpers/http.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { Hops, locationOf, signInAtUpstream } from '../upstream/hops.ts';

const REDIRECT = 'http://localhost:3000/cb';

/** The admin's view of a user's attributes. */
async function attributesOf(server: TestServer, admin: string, id: string): Promise<Record<string, unknown>> {
  const answer = await graphqlPost(server, admin, 'query($id: ID!) { user(id: $id) { attributes } }', { id });
  if (answer.errors) throw new Error(JSON.stringify(answer.errors));
  return (answer.data!.user as { attributes: Record<string, unknown> }).attributes;
}

/** A client that maps the attribute `employeeNumber` into its id_token, registered through GraphQL. */
async function mappingClient(server: TestServer, admin: string): Promise<{ clientId: string; clientSecret: string }> {
  const answer = await graphqlPost(
    server,
    admin,
    'mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId } clientSecret } }',
    {
      i: {
        name: 'HR',
        redirectUris: [REDIRECT],
        grantTypes: ['AUTHORIZATION_CODE', 'REFRESH_TOKEN', 'PASSWORD'],
        claimMappings: [
          { claim: 'employee_number', source: 'ATTRIBUTE', attribute: 'employeeNumber' },
          { claim: 'departments', source: 'ATTRIBUTE', attribute: 'departmentNumber', multiValued: true },
        ],
      },
    },
  );
  if (answer.errors) throw new Error(JSON.stringify(answer.errors));
  const { client, clientSecret } = answer.data!.registerClient as { client: { clientId: string }; clientSecret: string };
  return { clientId: client.clientId, clientSecret };
}

/**
 * docs/access-and-claims.md: a directory's `extraAttributes` (a real slapd)
 * and an upstream's `extraClaims` (node-oidc-provider) kept on the user's record at each sign-in, as
 * the admin API shows them and as a claim mapping releases them.
 */
describe.each(databaseKinds)('attributes from the directory and upstreams on %s', (kind) => {
  describe('a directory', () => {
    let slapd: Slapd;
    let server: TestServer;
    let admin: string;
    let hr: { clientId: string; clientSecret: string };

    const passwordGrant = (username: string, password: string): Promise<TokenAnswer> =>
      tokenRequest(
        server,
        { grant_type: 'password', username, password, scope: 'openid offline_access' },
        { authorization: basic(hr.clientId, hr.clientSecret) },
      );
    const idOf = async (username: string) => (await server.ctx.users.findByUsername('corp', username))!.id;

    beforeAll(async () => {
      slapd = await startSlapd();
      server = await startTestServer(
        kind,
        ldapChain(
          ldapBackendConfig(slapd, { extraAttributes: ['employeeNumber', 'departmentNumber', 'jpegPhoto', 'objectGUID', 'title'] }),
        ),
      );
      admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
      hr = await mappingClient(server, admin);
    });
    afterAll(async () => {
      await server?.stop();
      await slapd?.destroy();
    });

    test('a sign-in keeps the extraAttributes of the entry: one value as a string, several as a list, binary as base64', async () => {
      const t = await passwordGrant('bob', people.bob.password);
      expect(await attributesOf(server, admin, await idOf('bob'))).toEqual({
        employeeNumber: '1002',
        departmentNumber: ['Engineering', 'Research'],
        jpegPhoto: PHOTO.toString('base64'),
        // As idAttr reads it; `title`, which bob's entry lacks, is left out.
        objectGUID: guidString('bob'),
      });
      // A mapping reads them like any attribute.
      expect(decodeJwt(t.id_token!)).toMatchObject({ employee_number: '1002', departments: ['Engineering', 'Research'] });
    });

    test('a change in the directory reaches the record at the next sign-in and at a refresh; a removed attribute goes', async () => {
      const first = await passwordGrant('alice', people.alice.password);
      const alice = await idOf('alice');
      expect(await attributesOf(server, admin, alice)).toEqual({
        employeeNumber: '1001',
        departmentNumber: 'Sales',
        objectGUID: guidString('alice'),
      });

      await slapd.modify(personDn(people.alice), 'employeeNumber', ['2001']);
      await slapd.modify(personDn(people.alice), 'departmentNumber', []);
      await slapd.modify(personDn(people.alice), 'title', ['Director']);
      // The refresh grant reads the entry again.
      const refreshed = await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: first.refresh_token! },
        { authorization: basic(hr.clientId, hr.clientSecret) },
      );
      expect(await attributesOf(server, admin, alice)).toEqual({
        employeeNumber: '2001',
        objectGUID: guidString('alice'),
        title: 'Director',
      });
      expect(decodeJwt(refreshed.id_token!)).toMatchObject({ employee_number: '2001', departments: [] });

      await slapd.modify(personDn(people.alice), 'employeeNumber', ['3001']);
      const again = await passwordGrant('alice', people.alice.password);
      expect(decodeJwt(again.id_token!).employee_number).toBe('3001');
      expect((await attributesOf(server, admin, alice)).employeeNumber).toBe('3001');
    });

    test('without extraAttributes the backend reports none, and the record has none', async () => {
      const plain = await startTestServer(kind, ldapChain(ldapBackendConfig(slapd)));
      try {
        const token = (await adminCliToken(plain, 'admin', ADMIN_PASSWORD)).access_token;
        const c = await plain.client({ grantTypes: ['password'], scopes: ['openid'] });
        await tokenRequest(
          plain,
          { grant_type: 'password', username: 'bob', password: people.bob.password, scope: 'openid' },
          { authorization: basic(c.clientId, c.clientSecret!) },
        );
        const bob = (await plain.ctx.users.findByUsername('corp', 'bob'))!.id;
        expect(await attributesOf(plain, token, bob)).toEqual({});
      } finally {
        await plain.stop();
      }
    });

    test('a bad extraAttributes entry stops the start, naming the key', async () => {
      await expect(startTestServer(kind, ldapChain(ldapBackendConfig(slapd, { extraAttributes: ['employee number'] })))).rejects.toThrow(
        /identity backend "corp" \(plugin "ldap"\): invalid config: .*config\.extraAttributes\.0: must be an LDAP attribute name/,
      );
    });
  });

  describe('an upstream', () => {
    let server: TestServer;
    let upstream: OidcUpstream;
    let admin: string;

    /** Authorize → "Sign in with Partner IdP" → the upstream's login → back; the code flow's tokens. */
    async function signIn(client: { clientId: string; clientSecret: string }, account: string): Promise<{ id_token: string }> {
      const hops = new Hops();
      const url = `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', state: 'st' })}`;
      const page = await hops.get(url);
      const away = await hops.submitForm(url, await page.text(), /Sign in with Partner IdP/);
      const callback = await signInAtUpstream(hops, locationOf(away, url), account, server.url);
      const res = await hops.get(callback);
      expect(res.status).toBe(303);
      const done = await hops.get(locationOf(res, callback));
      const { code } = Object.fromEntries(new URL(done.headers.get('location')!).searchParams);
      const tokens = await exchangeCode(server, { ...client, redirectUri: REDIRECT }, code!);
      expect(tokens.status).toBe(200);
      return (await tokens.json()) as { id_token: string };
    }

    beforeAll(async () => {
      const port = await freePort();
      const home = `http://127.0.0.1:${port}`;
      upstream = await startOidcUpstream([`${home}/login/upstream/partner/callback`]);
      server = await startTestServer(kind, {
        port,
        publicUrl: home,
        identity: {
          upstreams: [
            {
              id: 'partner',
              name: 'Partner IdP',
              issuer: upstream.issuer,
              clientId: upstream.clientId,
              clientSecret: upstream.clientSecret,
              scopes: ['openid', 'profile', 'email', 'groups'],
              // A list, a string, a boolean, and one the upstream never sends.
              extraClaims: ['groups', 'name', 'email_verified', 'nickname'],
            },
          ],
        },
      });
      admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
      upstream.accounts.set('u-kim', {
        sub: 'u-kim',
        preferred_username: 'kim',
        email: 'kim@partner.example',
        email_verified: true,
        name: 'Kim Upstream',
        groups: ['partners', 'sales'],
      });
    });
    afterAll(async () => {
      await server?.stop();
      await upstream?.stop();
    });

    test('the extraClaims the upstream sends are kept as attributes at each sign-in', async () => {
      const answer = await graphqlPost(
        server,
        admin,
        'mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId } clientSecret } }',
        {
          i: {
            name: 'Partner portal',
            redirectUris: [REDIRECT],
            claimMappings: [{ claim: 'partner_groups', source: 'ATTRIBUTE', attribute: 'groups', multiValued: true }],
          },
        },
      );
      const { client, clientSecret } = answer.data!.registerClient as { client: { clientId: string }; clientSecret: string };
      const portal = { clientId: client.clientId, clientSecret };

      const first = await signIn(portal, 'u-kim');
      const kim = String(decodeJwt(first.id_token).sub);
      expect(await attributesOf(server, admin, kim)).toEqual({
        groups: ['partners', 'sales'],
        name: 'Kim Upstream',
        email_verified: 'true',
      });
      expect(decodeJwt(first.id_token).partner_groups).toEqual(['partners', 'sales']);

      upstream.accounts.set('u-kim', { ...upstream.accounts.get('u-kim')!, name: 'Kim Renamed', groups: ['partners'] });
      const second = await signIn(portal, 'u-kim');
      expect(await attributesOf(server, admin, kim)).toEqual({ groups: ['partners'], name: 'Kim Renamed', email_verified: 'true' });
      expect(decodeJwt(second.id_token).partner_groups).toEqual(['partners']);
    });
  });
});
