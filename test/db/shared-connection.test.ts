import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * On SQLite one connection serves the admin API's transactions and the token path's prepared
 * statements. A token answered while admin changes run (and roll back) must exist afterwards: no
 * acknowledged write may have slipped into a transaction that was then rolled back.
 */
describe('the shared SQLite connection under concurrent admin changes', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(() => server.stop());

  test('every token answered 200 during failing admin transactions is still active', async () => {
    const admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    const app = await server.client({ grantTypes: ['client_credentials'], scopes: ['api'] });
    const auth = { authorization: basic(app.clientId, app.clientSecret!) };
    const issued: string[] = [];
    for (let round = 0; round < 5; round++) {
      // Three creations of one name at once: one commits, two roll back (the name is taken).
      const changes = Array.from({ length: 3 }, () =>
        graphqlPost(server, admin, `mutation { createUser(input: { username: "twin-${round}", password: "twin-password-1" }) { id } }`),
      );
      const tokens = Array.from({ length: 20 }, () => postForm(`${server.url}/oauth/v20/token`, { grant_type: 'client_credentials' }, auth));
      const [answers] = await Promise.all([Promise.all(tokens), Promise.all(changes)]);
      for (const res of answers) {
        expect(res.status).toBe(200);
        issued.push(((await res.json()) as { access_token: string }).access_token);
      }
    }
    for (const token of issued) {
      const res = await postForm(`${server.url}/oauth/v20/introspect`, { token }, auth);
      expect(((await res.json()) as { active: boolean }).active).toBe(true);
    }
  });
});
