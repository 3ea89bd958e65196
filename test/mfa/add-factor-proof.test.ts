import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AccountBrowser, firstForm, textOf } from '../helpers/account.ts';
import { advanceClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { codeAt } from '../helpers/totp.ts';

/** Longer than the five minutes a proof counts for (docs/decisions.md, "Adding a factor"). */
const SIX_MINUTES = 6 * 60_000;

/**
 * docs/decisions.md, "Adding a factor": enrolling TOTP and registering a passkey ask for the password or a
 * current factor again, unless the session proved one in the last five minutes (issue 20, finding
 * 3). PUBLIC_URL is at `localhost` so passkeys are on.
 */
describe.each(databaseKinds)('adding a factor asks for proof on %s', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    const port = await freePort();
    server = await startTestServer(kind, { port, publicUrl: `http://localhost:${port}` });
  });
  afterAll(() => server.stop());

  async function signedIn(username: string): Promise<AccountBrowser> {
    await server.user(username, `${username}-password-1`);
    const b = new AccountBrowser(server);
    expect((await b.signInAtAccount(username, `${username}-password-1`)).html).toContain('Signed in as');
    return b;
  }

  test("an older session is asked for its password before the authenticator app's key is shown", async () => {
    const b = await signedIn('rosa');
    advanceClock(SIX_MINUTES);
    const asked = await b.open('/account/mfa/totp');
    expect(asked.status).toBe(200);
    expect(asked.html).toContain('Confirm it is you');
    expect(textOf(asked.html, 'totp-secret')).toBeUndefined();
    // Its enrolment form, posted anyway, turns nothing on.
    expect((await b.post('enrol', { code: '123456' }, '/account/mfa/totp')).html).not.toContain('totp-secret');

    const wrong = await b.post('prove', { password: 'not-her-password' }, '/account/mfa/totp');
    expect(wrong.status).toBe(401);
    expect(textOf(wrong.html, 'totp-secret')).toBeUndefined();
    const right = await b.post('prove', { password: 'rosa-password-1' }, '/account/mfa/totp');
    const secret = textOf(right.html, 'totp-secret')!;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect((await b.send('/account/mfa/totp', { ...firstForm(right.html), code: codeAt(secret, serverNow()) })).html).toContain(
      'id="recovery-codes"',
    );
  });

  test('an older session confirms before it is offered to add a passkey, and a passkey posted without is refused', async () => {
    const b = await signedIn('sami');
    expect((await b.open()).html).toContain('data-purpose="register"'); // just signed in: no question
    advanceClock(SIX_MINUTES);
    const page = await b.open();
    expect(page.html).not.toContain('data-purpose="register"');
    expect(page.html).toContain('To add a passkey, confirm it is you first.');
    const refused = await b.post('add_passkey', { name: 'Key', webauthn_state: 'x', webauthn_response: '{}' });
    expect(refused.status).toBe(401);
    expect(refused.html).toContain('Confirm it is you first');

    const confirmed = await b.post('prove', { password: 'sami-password-1' });
    expect(confirmed.status).toBe(200);
    expect(confirmed.html).toContain('data-purpose="register"');
    // Past the question now: the same nonsense is told it is not a passkey, not asked for proof.
    expect((await b.post('add_passkey', { name: 'Key', webauthn_state: 'x', webauthn_response: '{}' })).status).toBe(400);
  });

  test('a password-only session from before the authenticator app cannot turn it off with the password', async () => {
    const before = await signedIn('tara');
    const enrolling = new AccountBrowser(server);
    await enrolling.signInAtAccount('tara', 'tara-password-1');
    await enrolling.enrolTotp();

    const attempt = await before.post('remove_totp', { password: 'tara-password-1' });
    expect(attempt.html).not.toContain('The authenticator app is off');
    expect(attempt.html).toContain('name="username"'); // the login form: that session ended with the enrolment
    expect((await enrolling.open()).html).toContain('Turn off the authenticator app');
  });

  test('a client that needs MFA asks an older session for its password before the enrolment', async () => {
    const strict = await server.client({ scopes: ['openid'], requireMfa: true, redirectUris: ['http://localhost:3000/strict'] });
    const b = await signedIn('ugo');
    advanceClock(SIX_MINUTES);
    const query = { client_id: strict.clientId, redirect_uri: strict.redirectUri, response_type: 'code', scope: 'openid', state: 's' };
    const login = await (await b.authorize(query)).text();
    expect(login).toContain('name="password"');
    expect(textOf(login, 'totp-secret')).toBeUndefined();
    const enrol = await b.send('/oauth/v20/authorize', { ...firstForm(login), username: 'ugo', password: 'ugo-password-1' });
    expect(textOf(enrol.html, 'totp-secret')).toMatch(/^[A-Z2-7]{32}$/);
  });
});
