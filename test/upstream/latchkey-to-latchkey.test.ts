import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { freshDatabase, type TestDatabase } from '../helpers/databases.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { spawnLatchkey, type LatchkeyProcess } from '../helpers/latchkey-process.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { Hops, locationOf } from './hops.ts';

/**
 * Latchkey federating to Latchkey (docs/upstream-identity-providers.md): a second Latchkey process, started as `npm start` starts
 * it, on a database of its own, is the upstream of the first. Its users sign in with their password
 * there, and come back as users of the upstream here, with Latchkey's own tokens.
 */
describe('Latchkey as the upstream of Latchkey', () => {
  let upstreamDb: TestDatabase;
  let peer: LatchkeyProcess;
  let server: TestServer;
  let client: { clientId: string; redirectUri: string; clientSecret: string | null };

  beforeAll(async () => {
    upstreamDb = await freshDatabase('sqlite');
    peer = await spawnLatchkey({ DATABASE_URL: upstreamDb.url, LATCHKEY_SECRET: 'upstream-secret-upstream-secret-0123456789' });
    const port = await freePort();
    const home = `http://127.0.0.1:${port}`;
    const at = { url: peer.url } as TestServer;
    const { access_token } = await adminCliToken(at, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
    const registered = await graphqlPost(
      at,
      access_token,
      'mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId } clientSecret } }',
      {
        input: {
          name: 'Downstream Latchkey',
          redirectUris: [`${home}/login/upstream/corp/callback`],
          scopes: ['openid', 'profile', 'email'],
        },
      },
    );
    const { client: upstreamClient, clientSecret } = registered.data!.registerClient as {
      client: { clientId: string };
      clientSecret: string;
    };
    const created = await graphqlPost(at, access_token, 'mutation($input: CreateUserInput!) { createUser(input: $input) { id } }', {
      input: { username: 'dora', password: 'dora-password-1', email: 'dora@corp.test', displayName: 'Dora Upstream' },
    });
    expect(created.errors).toBeUndefined();
    server = await startTestServer('sqlite', {
      port,
      publicUrl: home,
      identity: { upstreams: [{ id: 'corp', name: 'Corp Latchkey', issuer: peer.url, clientId: upstreamClient.clientId, clientSecret }] },
    });
    client = await server.client();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await peer?.stop();
    await upstreamDb?.drop();
  });

  test('the password at the upstream Latchkey, then tokens of this one with amr fed, for a user keyed by (corp, sub)', async () => {
    const hops = new Hops();
    const start = `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', scope: 'openid profile email', state: 's1', nonce: 'n1' })}`;
    const page = await hops.get(start);
    const away = await hops.submitForm(start, await page.text(), /Sign in with Corp Latchkey/);
    expect(away.status).toBe(303);

    // The upstream's own login page, then its redirect back here.
    const upstreamAuthorize = locationOf(away, server.url);
    expect(upstreamAuthorize.startsWith(`${peer.url}/oauth/v20/authorize?`)).toBe(true);
    const login = await hops.get(upstreamAuthorize);
    expect(login.status).toBe(200);
    const signedIn = await hops.submitForm(upstreamAuthorize, await login.text(), /name="username"/, {
      username: 'dora',
      password: 'dora-password-1',
    });
    expect(signedIn.status).toBe(303);
    const callback = locationOf(signedIn, peer.url);
    expect(callback.startsWith(`${server.url}/login/upstream/corp/callback?`)).toBe(true);

    const resumed = await hops.get(callback);
    expect(resumed.status).toBe(303);
    const done = await hops.get(locationOf(resumed, server.url));
    expect(done.status).toBe(302);
    const q = Object.fromEntries(new URL(done.headers.get('location')!).searchParams);
    expect(q.state).toBe('s1');
    const tokens = (await (await exchangeCode(server, client, q.code!)).json()) as { id_token: string };
    const claims = decodeJwt(tokens.id_token);
    expect(claims.iss).toBe(server.url);
    expect(claims.amr).toEqual(['fed']);
    expect(claims.preferred_username).toBe('dora@corp');
    expect(claims.email).toBe('dora@corp.test');
    expect(await server.ctx.users.find(String(claims.sub))).toMatchObject({
      backend: 'corp',
      username: 'dora@corp',
      displayName: 'Dora Upstream',
    });
  });
});
