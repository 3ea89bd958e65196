import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { people } from '../fixtures/ldap/directory.ts';
import { serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode } from '../helpers/flow.ts';
import { basic, locationQuery, postForm } from '../helpers/http.ts';
import { codeAt } from '../helpers/totp.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

/**
 * `mfa.required` for a directory user (docs/multi-factor-sign-in.md): the factors live on the user's local record, so an
 * LDAP user enrols at the first sign-in like anyone, and from then on signs in with the code.
 */
describe.each(databaseKinds)('mfa.required with an LDAP user on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let client: { clientId: string; clientSecret: string | null; redirectUri: string };

  beforeAll(async () => {
    slapd = await startSlapd();
    server = await startTestServer(kind, { ...ldapChain(ldapBackendConfig(slapd)), mfa: { required: true } });
    client = await server.client({ grantTypes: ['authorization_code', 'password'], scopes: ['openid'] });
  });
  afterAll(async () => {
    await server?.stop();
    await slapd?.destroy();
  });

  test('the first sign-in enrols TOTP; the password grant then needs the code', async () => {
    const grant = (otp?: string) =>
      postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: 'alice', password: people.alice.password, scope: 'openid', otp },
        { authorization: basic(client.clientId, client.clientSecret!) },
      );

    // Before any factor: the password grant cannot enrol, and says where to.
    const before = await grant();
    expect(before.status).toBe(400);
    expect((await before.json()) as { error: string; error_description: string }).toMatchObject({
      error: 'mfa_required',
      error_description: expect.stringContaining('/account'),
    });

    const browser = new Browser(server);
    const enrol = await browser.signIn(
      { client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', scope: 'openid', state: 's' },
      'alice',
      people.alice.password,
    );
    expect(enrol.status).toBe(200);
    const html = await enrol.text();
    const secret = /id="totp-secret"[^>]*>([A-Z2-7]+)</.exec(html)![1]!;
    const codes = await browser.submit(new Response(html), { code: codeAt(secret, serverNow()) });
    const done = await browser.submit(codes, {});
    expect(done.status).toBe(303);
    const { id_token } = (await (await exchangeCode(server, client, locationQuery(done).code!)).json()) as { id_token: string };
    expect(decodeJwt(id_token).amr).toEqual(['pwd', 'otp', 'mfa']);

    const user = await server.sql('users').where({ backend: 'corp' }).first('id');
    expect(await server.sql('user_totp').where({ user_id: user.id }).whereNotNull('confirmed_at').first()).toBeDefined();
    expect((await grant()).status).toBe(400);
    const next = await grant(codeAt(secret, serverNow() + 30_000));
    expect(next.status).toBe(200);
  });
});
