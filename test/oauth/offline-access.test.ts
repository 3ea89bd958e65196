import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

interface Tokens {
  scope: string;
  refresh_token?: string;
  error?: string;
}

/** docs/connect-an-application.md, "Scopes stock clients send": offline_access, as openid-client and Auth0's SDKs send it. */
describe('offline_access', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('alice', 'alice-password-1');
  });
  afterAll(() => server.stop());

  test('is announced in discovery', async () => {
    const meta = await (await get(`${server.url}/.well-known/openid-configuration`)).json();
    expect(meta.scopes_supported).toContain('offline_access');
  });

  test('is granted to a client allowed the refresh grant, though not among its registered scopes', async () => {
    const client = await server.client({ scopes: ['openid'], grantTypes: ['authorization_code', 'refresh_token'] });
    const q = await obtainCode(new Browser(server), client, 'alice', 'alice-password-1', { scope: 'openid offline_access' });
    expect(q.error).toBeUndefined();
    const tokens = (await (await exchangeCode(server, client, q.code!)).json()) as Tokens;
    expect(tokens.scope.split(' ').sort()).toEqual(['offline_access', 'openid']);
    expect(tokens.refresh_token).toEqual(expect.any(String));
  });

  test('the password grant accepts it too', async () => {
    const client = await server.client({ scopes: ['openid'], grantTypes: ['password', 'refresh_token'], redirectUris: [] });
    const res = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username: 'alice', password: 'alice-password-1', scope: 'openid offline_access' },
      { authorization: basic(client.clientId, client.clientSecret!) },
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as Tokens).scope.split(' ').sort()).toEqual(['offline_access', 'openid']);
  });

  test('from a client without the refresh grant it is ignored (OIDC Core 11), not refused', async () => {
    const client = await server.client({ scopes: ['openid'], grantTypes: ['authorization_code'] });
    const q = await obtainCode(new Browser(server), client, 'alice', 'alice-password-1', { scope: 'openid offline_access' });
    expect(q.error).toBeUndefined();
    const tokens = (await (await exchangeCode(server, client, q.code!)).json()) as Tokens;
    expect(tokens.scope).toBe('openid');
    expect(tokens.refresh_token).toBeUndefined();
  });
});
