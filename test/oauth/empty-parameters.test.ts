import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken } from '../helpers/admin-api.ts';
import { basic } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** A form POST with the body written out by hand, byte for byte as the client sends it. */
const rawPost = (url: string, body: string, headers: Record<string, string>) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });

/**
 * docs/decisions.md "Empty parameters" (RFC 6749 §3.1): a parameter sent without a value is treated as
 * omitted, at every endpoint. Dovecot's `passdb oauth2` introspects with exactly the request below.
 */
describe('empty parameters are omitted parameters', () => {
  let server: TestServer;
  let imap: { clientId: string; clientSecret: string };
  let userToken: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('ada', 'ada-password-1', { email: 'ada@example.com' });
    const c = await server.client({ name: 'dovecot', redirectUris: [], grantTypes: ['client_credentials'], roles: ['introspect'] });
    imap = { clientId: c.clientId, clientSecret: c.clientSecret! };
    userToken = (await adminCliToken(server, 'ada', 'ada-password-1')).access_token;
  });
  afterAll(async () => {
    await server?.stop();
  });

  test("Dovecot's introspection: Basic credentials and `client_id=&client_secret=` in the body", async () => {
    const res = await rawPost(`${server.url}/oauth/v20/introspect`, `token=${encodeURIComponent(userToken)}&client_id=&client_secret=`, {
      authorization: basic(imap.clientId, imap.clientSecret),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ active: true, username: 'ada' });
  });

  test('the token endpoint: Basic credentials beside an empty client_secret', async () => {
    const res = await rawPost(`${server.url}/oauth/v20/token`, 'grant_type=client_credentials&client_secret=&scope=', {
      authorization: basic(imap.clientId, imap.clientSecret),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ token_type: 'bearer' });
  });

  test('userinfo: a Bearer header beside an empty access_token parameter', async () => {
    const res = await fetch(`${server.url}/connect/v10/userinfo?access_token=`, { headers: { authorization: `Bearer ${userToken}` } });
    expect(res.status).toBe(200);
  });

  test('nothing loosened: credentials in the header and a non-empty body are still refused', async () => {
    const res = await rawPost(
      `${server.url}/oauth/v20/introspect`,
      `token=${encodeURIComponent(userToken)}&client_id=${imap.clientId}&client_secret=${imap.clientSecret}`,
      {
        authorization: basic(imap.clientId, imap.clientSecret),
      },
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
  });

  test('an empty client_id alone is still a missing client_id (empty_client_id)', async () => {
    const res = await rawPost(`${server.url}/oauth/v20/token`, 'grant_type=client_credentials&client_id=', {});
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'empty_client_id' });
  });
});
