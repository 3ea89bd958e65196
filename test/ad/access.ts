import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import type { DatabaseKind } from '../helpers/databases.ts';
import { Browser, obtainCode } from '../helpers/flow.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, type TestServer } from '../helpers/server.ts';
import { people } from './directory.ts';
import { adConfig, Servers } from './harness.ts';

const REGISTER = `mutation Register($input: RegisterClientInput!) {
  registerClient(input: $input) { client { clientId name } clientSecret }
}`;

/**
 * docs/access-and-claims.md: an access policy naming an AD group holds for its members through nested
 * groups as AD resolves them (LDAP_MATCHING_RULE_IN_CHAIN): alice is in Latchkey Admins only through
 * IT Ops; bob is not in it at all.
 */
export function accessTests(kind: DatabaseKind): void {
  describe(`AD groups in access policies on ${kind}`, () => {
    const servers = new Servers(kind);
    let server: TestServer;
    let app: { clientId: string; clientSecret: string; redirectUri: string; name: string };

    beforeAll(async () => {
      server = await servers.start(adConfig());
      const token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
      const redirectUri = 'http://localhost:3000/callback';
      const answer = await graphqlPost(server, token, REGISTER, {
        input: {
          name: 'Domain Console',
          redirectUris: [redirectUri],
          grantTypes: ['AUTHORIZATION_CODE', 'PASSWORD'],
          scopes: ['openid', 'profile'],
          access: { mode: 'ASSIGNED', groups: ['Latchkey Admins'] },
        },
      });
      expect(answer.errors).toBeUndefined();
      const reg = answer.data!.registerClient as { client: { clientId: string; name: string }; clientSecret: string };
      app = { clientId: reg.client.clientId, clientSecret: reg.clientSecret, redirectUri, name: reg.client.name };
    });
    afterAll(() => servers.stopAll());

    const passwordGrant = (username: string, password: string) =>
      postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username, password, scope: 'openid profile' },
        { authorization: basic(app.clientId, app.clientSecret) },
      );

    test('a member through a nested group is let in; a user outside it is refused, at the token endpoint and in the browser', async () => {
      expect((await passwordGrant('alice', people.alice.password)).status).toBe(200);
      const { code } = await obtainCode(new Browser(server), app, 'alice', people.alice.password, { scope: 'openid profile' });
      expect(code).toBeDefined();

      const refused = await passwordGrant('bob', people.bob.password);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({ error: 'invalid_grant', error_description: 'the user may not use this application' });
      const page = await new Browser(server).signIn(
        { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', scope: 'openid profile' },
        'bob',
        people.bob.password,
      );
      expect(page.status).toBe(403);
      expect(page.headers.get('location')).toBeNull();
      expect(await page.text()).toContain(`You don't have access to <span id="application">Domain Console</span>`);
    });
  });
}
