import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import { AccountBrowser, firstForm, recoveryCodesOf, redeem, textOf } from '../helpers/account.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import type { CodeFlowClient } from '../helpers/flow.ts';
import { basic, hiddenFields, postForm } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { SoftAuthenticator } from '../helpers/soft-authenticator.ts';
import { codeAt } from '../helpers/totp.ts';

/**
 * docs/decisions.md, "Sessions end with the credentials": a new password (own or an administrator's), a factor
 * added or removed, `resetUserMfa`, a disabled user and `revokeTokens` end every other SSO session of
 * the user, revoke their tokens and refuse every code issued before; the session that made the change
 * stays. PUBLIC_URL is at `localhost` so passkeys are on.
 */
describe.each(databaseKinds)('sessions end with the credentials on %s', (kind) => {
  let server: TestServer;
  let origin: string;
  let app: CodeFlowClient;
  let adminToken: string;

  beforeAll(async () => {
    const port = await freePort();
    origin = `http://localhost:${port}`;
    server = await startTestServer(kind, { port, publicUrl: origin });
    app = await server.client({ grantTypes: ['authorization_code', 'refresh_token'], scopes: ['openid'] });
    adminToken = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
  });
  afterAll(() => server.stop());

  const refresh = (token: string) =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'refresh_token', refresh_token: token },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );
  const admin = async (mutation: string, id: string) => {
    const answer = await graphqlPost(server, adminToken, mutation, { id });
    expect(answer.errors).toBeUndefined();
  };

  /**
   * A user signed in in two browsers. `elsewhere` holds tokens with a refresh token; each browser
   * holds a code not yet redeemed, issued before whatever the test changes.
   */
  async function signedInTwice(username: string) {
    const password = `${username}-password-1`;
    const userId = await server.user(username, password);
    const [here, elsewhere] = [new AccountBrowser(server), new AccountBrowser(server)];
    await here.signInAtAccount(username, password);
    await elsewhere.signInAtAccount(username, password);
    const refreshToken = String((await redeem(server, app, await elsewhere.code(app))).body.refresh_token);
    return { userId, password, here, elsewhere, refreshToken, codesBefore: [await here.code(app), await elsewhere.code(app)] };
  }

  /** What the change left of the user's sign-ins elsewhere: nothing; and no code from before is good. */
  async function expectEndedElsewhere(u: Awaited<ReturnType<typeof signedInTwice>>) {
    expect(await u.elsewhere.signedIn()).toBe(false);
    for (const code of u.codesBefore) {
      const answer = await redeem(server, app, code);
      expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      expect(answer.body.access_token).toBeUndefined();
    }
    expect((await refresh(u.refreshToken)).status).toBe(400);
  }

  /** The session that made the change goes on: still signed in, and its new codes are good. */
  async function expectKept(b: AccountBrowser) {
    expect(await b.signedIn()).toBe(true);
    expect((await redeem(server, app, await b.code(app))).status).toBe(200);
  }

  test('a new password at /account ends the other sessions, keeps this one, and refuses every code from before', async () => {
    const u = await signedInTwice('dana');
    expect((await u.here.post('password', { password: u.password, new_password: 'dana-password-2' })).status).toBe(200);
    await expectEndedElsewhere(u);
    await expectKept(u.here);
  });

  test('enrolling the authenticator app ends the other sessions; the one that enrolled stays', async () => {
    const u = await signedInTwice('erin');
    await u.here.enrolTotp();
    await expectEndedElsewhere(u);
    await expectKept(u.here);
  });

  test('turning the authenticator app off ends the other sessions', async () => {
    const u = await signedInTwice('fay');
    const { secret } = await u.here.enrolTotp();
    // Signed in again elsewhere, with the second step this time.
    const step = await u.elsewhere.signInAtAccount('fay', u.password);
    expect((await u.elsewhere.send('/account', { ...firstForm(step.html), code: codeAt(secret, serverNow() + 30_000) })).status).toBe(303);
    const refreshToken = String((await redeem(server, app, await u.elsewhere.code(app))).body.refresh_token);
    const later = { ...u, refreshToken, codesBefore: [await u.here.code(app), await u.elsewhere.code(app)] };
    expect((await u.here.post('remove_totp', { password: u.password })).status).toBe(200);
    await expectEndedElsewhere(later);
    await expectKept(u.here);
  });

  test('adding a passkey ends the other sessions', async () => {
    const u = await signedInTwice('gil');
    const key = new SoftAuthenticator(origin);
    const csrf = hiddenFields((await u.here.open()).html).csrf_token;
    const { options, state } = JSON.parse((await u.here.send('/passkey/options', { purpose: 'register', csrf_token: csrf })).html) as {
      options: PublicKeyCredentialCreationOptionsJSON;
      state: string;
    };
    const added = await u.here.post('add_passkey', {
      name: 'Soft key',
      webauthn_state: state,
      webauthn_response: JSON.stringify(key.register(options)),
    });
    expect(recoveryCodesOf(added.html)).toHaveLength(10);
    await expectEndedElsewhere(u);
    await expectKept(u.here);
  });

  test('removing a passkey ends the other sessions', async () => {
    const u = await signedInTwice('hal');
    await server.sql('passkeys').insert({
      credential_id: 'hal-key',
      user_id: u.userId,
      public_key: 'x',
      counter: 0,
      transports: '[]',
      name: 'Old key',
      created_at: serverNow(),
    });
    expect((await u.here.post('remove_passkey', { credential_id: 'hal-key', password: u.password })).html).toContain(
      'The passkey is removed.',
    );
    await expectEndedElsewhere(u);
    await expectKept(u.here);
  });

  test('the enrolment a client that needs MFA asks for ends the other sessions too', async () => {
    const strict = await server.client({
      grantTypes: ['authorization_code'],
      scopes: ['openid'],
      requireMfa: true,
      redirectUris: ['http://localhost:3000/strict'],
    });
    const u = await signedInTwice('ivy');
    const third = new AccountBrowser(server);
    const login = await third.authorize({
      client_id: strict.clientId,
      redirect_uri: strict.redirectUri,
      response_type: 'code',
      scope: 'openid',
      state: 's',
    });
    const enrol = await third.send('/oauth/v20/authorize', { ...firstForm(await login.text()), username: 'ivy', password: u.password });
    const codes = await third.send('/oauth/v20/authorize', {
      ...firstForm(enrol.html),
      code: codeAt(textOf(enrol.html, 'totp-secret')!, serverNow()),
    });
    expect(recoveryCodesOf(codes.html)).toHaveLength(10);
    await expectEndedElsewhere(u);
    expect(await u.here.signedIn()).toBe(false);
  });

  test.each([
    ['setUserPassword', `mutation($id: ID!) { setUserPassword(id: $id, password: "a-new-password-1") }`],
    ['resetUserMfa', `mutation($id: ID!) { resetUserMfa(id: $id) { id } }`],
    ['revokeTokens', `mutation($id: ID!) { revokeTokens(userId: $id) }`],
    ['updateUser disabled', `mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { id } }`],
  ])("an administrator's %s ends every session of the user", async (what, mutation) => {
    const u = await signedInTwice(`u-${what.replace(/\W/g, '')}`.toLowerCase());
    await admin(mutation, u.userId);
    // A disabled user is signed out anyway: enabled again, the sessions must still be gone.
    if (what.startsWith('updateUser'))
      await admin(`mutation($id: ID!) { updateUser(id: $id, input: { disabled: false }) { id } }`, u.userId);
    await expectEndedElsewhere(u);
    expect(await u.here.signedIn()).toBe(false);
  });
});
