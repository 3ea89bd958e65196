import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { basic, get, locationQuery, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

type Tokens = { access_token: string; refresh_token?: string; id_token?: string };

/** RFC 8707: access tokens for a resource; never with the client id as their audience. */
describe.each(databaseKinds)('resource indicators on %s', (kind) => {
  let server: TestServer;
  let adminToken: string;
  let tokenUrl: string;
  const api = 'https://api.example.org/orders';

  const graphql = async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    const res = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data: T; errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  /** Registered through the admin API, so its fields are tested there too. */
  const register = async (input: Record<string, unknown>) => {
    const { registerClient } = await graphql<{
      registerClient: { client: { clientId: string; defaultAudience: string | null; errorCodes: string }; clientSecret: string };
    }>(
      'mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId defaultAudience errorCodes } clientSecret } }',
      {
        input: {
          name: 'App',
          redirectUris: ['http://localhost:3000/cb'],
          grantTypes: ['PASSWORD', 'REFRESH_TOKEN', 'AUTHORIZATION_CODE', 'CLIENT_CREDENTIALS'],
          accessTokenFormat: 'JWT',
          ...input,
        },
      },
    );
    return {
      clientId: registerClient.client.clientId,
      clientSecret: registerClient.clientSecret,
      redirectUri: 'http://localhost:3000/cb',
      client: registerClient.client,
    };
  };
  const auth = (c: { clientId: string; clientSecret: string }) => ({ authorization: basic(c.clientId, c.clientSecret) });
  const passwordGrant = async (c: { clientId: string; clientSecret: string }, extra: Record<string, string> = {}) =>
    postForm(
      tokenUrl,
      { grant_type: 'password', username: 'ivan', password: 'ivan-password-1', scope: 'openid profile', ...extra },
      auth(c),
    );
  const introspect = async (c: { clientId: string; clientSecret: string }, token: string) =>
    (await (await postForm(`${server.url}/oauth/v20/introspect`, { token }, auth(c))).json()) as Record<string, unknown>;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('ivan', 'ivan-password-1');
    tokenUrl = `${server.url}/oauth/v20/token`;
    const res = await postForm(tokenUrl, {
      grant_type: 'password',
      client_id: 'admin-cli',
      username: 'admin',
      password: 'admin-password-for-tests',
    });
    adminToken = ((await res.json()) as Tokens).access_token;
  });
  afterAll(() => server.stop());

  test('aud is the resource asked for; the id_token is for the client; introspection agrees', async () => {
    const c = await register({});
    expect(c.client).toMatchObject({ defaultAudience: null, errorCodes: 'MAXKEY' });
    const res = await passwordGrant(c, { resource: api });
    expect(res.status).toBe(200);
    const t = (await res.json()) as Tokens;
    const jwks = createRemoteJWKSet(new URL(`${server.url}/connect/v10/jwks`));
    const { payload } = await jwtVerify(t.access_token, jwks, { issuer: server.url, audience: api, typ: 'at+jwt' });
    expect(payload.client_id).toBe(c.clientId);
    expect(decodeJwt(t.id_token!).aud).toBe(c.clientId);
    expect(await introspect(c, t.access_token)).toMatchObject({ active: true, aud: api });
    // The refresh token keeps its resource.
    const again = (await (
      await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token: t.refresh_token! }, auth(c))
    ).json()) as Tokens;
    expect(decodeJwt(again.access_token).aud).toBe(api);
  });

  test("aud is the client's defaultAudience, else the userinfo URL; never the client id", async () => {
    const withDefault = await register({ defaultAudience: 'https://api.example.org/' });
    expect(withDefault.client.defaultAudience).toBe('https://api.example.org/');
    const a = (await (await passwordGrant(withDefault)).json()) as Tokens;
    expect(decodeJwt(a.access_token).aud).toBe('https://api.example.org/');

    const plain = await register({});
    const b = (await (await passwordGrant(plain)).json()) as Tokens;
    expect(decodeJwt(b.access_token).aud).toBe(`${server.url}/connect/v10/userinfo`);
    expect(decodeJwt(b.access_token).aud).not.toBe(plain.clientId);
    // An opaque token's audience shows at introspection alone.
    const opaque = await register({ accessTokenFormat: 'OPAQUE' });
    const o = (await (await passwordGrant(opaque)).json()) as Tokens;
    expect(await introspect(opaque, o.access_token)).toMatchObject({ active: true, aud: `${server.url}/connect/v10/userinfo` });

    // updateClient sets both fields; null goes back to the userinfo URL.
    const updated = await graphql<{ updateClient: { defaultAudience: string | null; errorCodes: string } }>(
      'mutation($id: ID!) { updateClient(clientId: $id, input: { defaultAudience: "https://other.example.org/", errorCodes: RFC6749 }) { defaultAudience errorCodes } }',
      { id: plain.clientId },
    );
    expect(updated.updateClient).toEqual({ defaultAudience: 'https://other.example.org/', errorCodes: 'RFC6749' });
    const c = (await (await passwordGrant(plain)).json()) as Tokens;
    expect(decodeJwt(c.access_token).aud).toBe('https://other.example.org/');
    const reset = await graphql<{ updateClient: { defaultAudience: string | null } }>(
      'mutation($id: ID!) { updateClient(clientId: $id, input: { defaultAudience: null }) { defaultAudience } }',
      { id: plain.clientId },
    );
    expect(reset.updateClient.defaultAudience).toBeNull();

    const refused = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({
        query:
          'mutation { registerClient(input: { name: "X", redirectUris: ["http://localhost:3000/cb"], defaultAudience: "not a uri#x" }) { clientSecret } }',
      }),
    });
    expect(JSON.stringify(await refused.json())).toContain('defaultAudience');
  });

  test('client_credentials: introspection says sub = the client id, and aud', async () => {
    const c = await register({});
    const res = await postForm(tokenUrl, { grant_type: 'client_credentials', resource: api }, auth(c));
    expect(res.status).toBe(200);
    const t = (await res.json()) as Tokens;
    expect(decodeJwt(t.access_token)).toMatchObject({ sub: c.clientId, aud: api });
    expect(await introspect(c, t.access_token)).toMatchObject({ active: true, sub: c.clientId, client_id: c.clientId, aud: api });
  });

  test('a resource that is not an absolute URI without fragment is invalid_target, at the token endpoint and at authorize', async () => {
    const c = await register({});
    for (const resource of ['orders', 'https://api.example.org/#frag']) {
      const res = await passwordGrant(c, { resource });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe('invalid_target');
    }
    const browser = new Browser(server);
    const res = await browser.authorize({
      client_id: c.clientId,
      redirect_uri: c.redirectUri,
      response_type: 'code',
      state: 's',
      resource: 'relative/path',
    });
    expect(res.status).toBe(302);
    expect(locationQuery(res)).toMatchObject({ error: 'invalid_target', state: 's' });
  });

  test('the resource given at authorize is bound to the code: another one at the token request is invalid_target', async () => {
    const c = await register({});
    const browser = new Browser(server);
    const { code } = await obtainCode(browser, c, 'ivan', 'ivan-password-1', { resource: api, scope: 'openid' });
    const wrong = await exchangeCode(server, c, code!, { resource: 'https://evil.example.org/' });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: string }).error).toBe('invalid_target');

    const again = await browser.authorize({
      client_id: c.clientId,
      redirect_uri: c.redirectUri,
      response_type: 'code',
      state: 's',
      resource: api,
      scope: 'openid',
    });
    const code2 = new URL(again.headers.get('location')!).searchParams.get('code')!;
    const ok = await exchangeCode(server, c, code2, { resource: api });
    expect(ok.status).toBe(200);
    const t = (await ok.json()) as Tokens;
    expect(decodeJwt(t.access_token).aud).toBe(api);
    expect(decodeJwt(t.id_token!).aud).toBe(c.clientId);
    // The token is still good at this server's own endpoints.
    expect((await get(`${server.url}/connect/v10/userinfo`, {}, { authorization: `Bearer ${t.access_token}` })).status).toBe(200);
  });
  /** A form with repeated parameters, as RFC 8707 sends several resources. */
  const postPairs = (url: string, pairs: Array<[string, string]>, headers: Record<string, string>) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(pairs).toString(),
    });
  const api2 = 'https://api.example.org/invoices';
  const both = [
    ['resource', api],
    ['resource', api2],
  ] as Array<[string, string]>;
  const expectInvalidTarget = async (res: Response) => {
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_target');
  };

  test('several resources: aud lists them all; a refresh may narrow to one, and the refresh token keeps them all', async () => {
    const c = await register({});
    const res = await postPairs(
      tokenUrl,
      [['grant_type', 'password'], ['username', 'ivan'], ['password', 'ivan-password-1'], ['scope', 'openid'], ...both],
      auth(c),
    );
    expect(res.status).toBe(200);
    const t = (await res.json()) as Tokens;
    const jwks = createRemoteJWKSet(new URL(`${server.url}/connect/v10/jwks`));
    for (const audience of [api, api2]) await jwtVerify(t.access_token, jwks, { issuer: server.url, audience, typ: 'at+jwt' });
    expect(decodeJwt(t.access_token).aud).toEqual([api, api2]);
    expect(await introspect(c, t.access_token)).toMatchObject({ active: true, aud: [api, api2] });

    const refresh = (token: string, pairs: Array<[string, string]>) =>
      postPairs(tokenUrl, [['grant_type', 'refresh_token'], ['refresh_token', token], ...pairs], auth(c));
    const narrowed = (await (await refresh(t.refresh_token!, [['resource', api2]])).json()) as Tokens;
    expect(decodeJwt(narrowed.access_token).aud).toBe(api2);
    const all = (await (await refresh(narrowed.refresh_token!, [])).json()) as Tokens;
    expect(decodeJwt(all.access_token).aud).toEqual([api, api2]);
    await expectInvalidTarget(
      await refresh(all.refresh_token!, [
        ['resource', api],
        ['resource', 'https://evil.example.org/'],
      ]),
    );

    const cc = await postPairs(tokenUrl, [['grant_type', 'client_credentials'], ...both], auth(c));
    expect(decodeJwt(((await cc.json()) as Tokens).access_token).aud).toEqual([api, api2]);
    // Each must be an absolute URI without fragment.
    await expectInvalidTarget(
      await postPairs(
        tokenUrl,
        [
          ['grant_type', 'client_credentials'],
          ['resource', api],
          ['resource', 'https://api.example.org/#x'],
        ],
        auth(c),
      ),
    );
    await expectInvalidTarget(
      await postPairs(
        tokenUrl,
        [
          ['grant_type', 'client_credentials'],
          ['resource', api],
          ['resource', 'relative'],
        ],
        auth(c),
      ),
    );
    // Other parameters still may not repeat.
    const twice = await postPairs(
      tokenUrl,
      [
        ['grant_type', 'client_credentials'],
        ['scope', 'a'],
        ['scope', 'b'],
      ],
      auth(c),
    );
    expect(((await twice.json()) as { error: string }).error).toBe('invalid_request');
  });

  test('several resources at authorize: bound to the code through sign-in; the token request may name only those (RFC 8707 2.2)', async () => {
    const c = await register({});
    const browser = new Browser(server);
    const query = { client_id: c.clientId, redirect_uri: c.redirectUri, response_type: 'code', state: 's', scope: 'openid' };
    const path = `/oauth/v20/authorize?${new URLSearchParams(both)}`;
    const page = await browser.authorize(query, path);
    expect(page.status).toBe(200);
    const signedIn = await browser.submit(page, { username: 'ivan', password: 'ivan-password-1' });
    expect(signedIn.status).toBe(303);
    const code = () => browser.authorize(query, path).then((r) => locationQuery(r).code!);
    const exchange = (codeValue: string, pairs: Array<[string, string]>) =>
      postPairs(tokenUrl, [['grant_type', 'authorization_code'], ['code', codeValue], ['redirect_uri', c.redirectUri], ...pairs], auth(c));

    const one = (await (await exchange(locationQuery(signedIn).code!, [['resource', api2]])).json()) as Tokens;
    expect(decodeJwt(one.access_token).aud).toBe(api2);
    const all = (await (await exchange(await code(), [])).json()) as Tokens;
    expect(decodeJwt(all.access_token).aud).toEqual([api, api2]);
    await expectInvalidTarget(
      await exchange(await code(), [
        ['resource', api],
        ['resource', 'https://evil.example.org/'],
      ]),
    );

    const bad = await browser.authorize(query, `/oauth/v20/authorize?resource=${encodeURIComponent(api)}&resource=orders`);
    expect(bad.status).toBe(302);
    expect(locationQuery(bad)).toMatchObject({ error: 'invalid_target', state: 's' });
  });
});
