import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { AccountBrowser } from '../helpers/account.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { hiddenFields } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { SoftAuthenticator } from '../helpers/soft-authenticator.ts';
import { freshAddress, linkIn, MailServer, ResetBrowser, type Answer } from './harness.ts';

/**
 * docs/password-reset-by-mail.md, "Forgotten password": "A user with a second factor must pass it before the new password
 * is set", and a passkey is such a factor (docs/multi-factor-sign-in.md). The reset page offers the user's passkey beside
 * the code; its challenge is stored server-side and used once, as at a sign-in's second step
 * (docs/decisions.md, "Passkeys"). PUBLIC_URL is at `localhost` (passkeys are off at an IP address).
 */
describe.each(databaseKinds)('a passkey as the second step of a reset by mail on %s', (kind) => {
  let server: TestServer;
  let smtp: MailServer;
  let origin: string;

  /** A user with an email who registered `key` at the account page. */
  async function userWithPasskey(username: string, key: SoftAuthenticator): Promise<void> {
    await server.user(username, `${username}-password-1`, { email: `${username}@example.com` });
    const account = new AccountBrowser(server);
    await account.signInAtAccount(username, `${username}-password-1`);
    const page = await account.open();
    const csrf = hiddenFields(page.html).csrf_token!;
    const got = await account.send('/passkey/options', { csrf_token: csrf, purpose: 'register' });
    expect(got.status).toBe(200);
    const { options, state } = JSON.parse(got.html) as { options: PublicKeyCredentialCreationOptionsJSON; state: string };
    const added = await account.send('/account', {
      _action: 'add_passkey',
      csrf_token: csrf,
      name: 'Soft key',
      webauthn_state: state,
      webauthn_response: JSON.stringify(key.register(options)),
    });
    expect(added.status).toBe(200);
  }

  /** The token of the `n`-th reset link mailed to `username`. */
  async function linkFor(username: string, n = 1): Promise<string> {
    await new ResetBrowser(server, freshAddress()).requestReset(username);
    return linkIn(await smtp.nth(`${username}@example.com`, n)).token;
  }

  /** The reset page's forms: the passkey button's (`data-passkey`) and the new password's. */
  function formsOf(page: Answer) {
    const forms = htmlForms(page.html);
    return { passkey: forms.find((f) => f.fields._action === 'passkey'), reset: forms.find((f) => f.fields._action === 'reset')! };
  }

  /** What the page's script does: the options for the link's second step, then the authenticator's answer. */
  async function passkeyAnswer(b: ResetBrowser, page: Answer, key: SoftAuthenticator) {
    const { passkey } = formsOf(page);
    expect(passkey).toBeDefined();
    const got = await b.post('/passkey/options', {
      csrf_token: passkey!.fields.csrf_token,
      purpose: 'reset',
      token: passkey!.fields.token,
    });
    expect(got.status).toBe(200);
    const { options, state } = JSON.parse(got.html) as { options: PublicKeyCredentialRequestOptionsJSON; state: string };
    return { options, fields: { ...passkey!.fields, webauthn_state: state, webauthn_response: JSON.stringify(key.assert(options)) } };
  }

  beforeAll(async () => {
    smtp = await MailServer.start();
    const port = await freePort();
    origin = `http://localhost:${port}`;
    server = await startTestServer(kind, {
      port,
      publicUrl: origin,
      trustProxy: '1',
      passwordReset: { enabled: true, accountLimit: 20 },
      smtp: { url: smtp.url, from: 'Latchkey <sso@example.com>' },
    });
  });
  afterAll(async () => {
    await server.stop();
    await smtp.close();
  });

  test('the passkey passes the second step, then the new password is set; without it, nothing is', async () => {
    const key = new SoftAuthenticator(origin);
    await userWithPasskey('hana', key);
    const token = await linkFor('hana');
    const b = new ResetBrowser(server, freshAddress());
    const page = await b.open(`/password/reset?token=${token}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain('data-purpose="reset"');
    expect(page.html).toContain('src="/assets/passkey.js"');

    // Without the passkey (or a code) the password is not set.
    const { reset } = formsOf(page);
    const without = await b.post('/password/reset', { ...reset.fields, password: 'hana-new-password', confirm: 'hana-new-password' });
    expect(without.status).toBe(401);
    expect(without.html).toContain('name="code"');

    const { options, fields } = await passkeyAnswer(b, page, key);
    expect(options.allowCredentials?.map((c) => c.id)).toEqual([key.id]);
    const passed = await b.post('/password/reset', fields);
    expect(passed.status).toBe(200);
    expect(passed.html).toContain('id="reset-passkey-passed"');
    expect(passed.html).not.toContain('name="code"');

    const done = await b.post('/password/reset', {
      ...formsOf(passed).reset.fields,
      password: 'hana-new-password',
      confirm: 'hana-new-password',
    });
    expect(done.status).toBe(200);
    expect(done.html).toContain('Your new password is set');
    // The new password is right: the sign-in goes on to its own second step.
    const next = await new AccountBrowser(server).signInAtAccount('hana', 'hana-new-password');
    expect(next.html).toContain('Confirm it is you');
  });

  test('a wrong passkey, a replayed answer or a made-up proof does not pass', async () => {
    const key = new SoftAuthenticator(origin);
    await userWithPasskey('ivan', key);
    const token = await linkFor('ivan');
    const b = new ResetBrowser(server, freshAddress());
    const page = await b.open(`/password/reset?token=${token}`);

    // Another authenticator's answer to this link's challenge.
    const stranger = await passkeyAnswer(b, page, new SoftAuthenticator(origin));
    const refused = await b.post('/password/reset', stranger.fields);
    expect(refused.status).toBe(401);
    expect(refused.html).toContain('The passkey was not accepted');

    // The right answer works once; sent again, its challenge is spent.
    const right = await passkeyAnswer(b, page, key);
    expect((await b.post('/password/reset', right.fields)).status).toBe(200);
    const replayed = await b.post('/password/reset', right.fields);
    expect(replayed.status).toBe(401);
    expect(replayed.html).toContain('The passkey was not accepted');

    // A proof that is not the server's is no proof: the code is asked for.
    const forged = await b.post('/password/reset', {
      ...formsOf(page).reset.fields,
      factor_proof: 'eyJsaW5rIjoieCJ9.forged',
      password: 'ivan-new-password',
      confirm: 'ivan-new-password',
    });
    expect(forged.status).toBe(401);
    expect(forged.html).toContain('name="code"');
    const stillOld = new AccountBrowser(server);
    expect((await stillOld.signInAtAccount('ivan', 'ivan-password-1')).html).toContain('Confirm it is you');
  });

  test('the proof is bound to its link: a passkey passed for one link does not pass another', async () => {
    const key = new SoftAuthenticator(origin);
    await userWithPasskey('jill', key);
    const first = await linkFor('jill', 1);
    const second = await linkFor('jill', 2);
    const b = new ResetBrowser(server, freshAddress());
    const firstPage = await b.open(`/password/reset?token=${first}`);
    const passed = await b.post('/password/reset', (await passkeyAnswer(b, firstPage, key)).fields);
    const proof = formsOf(passed).reset.fields.factor_proof;
    expect(proof).toBeTruthy();

    const secondPage = await b.open(`/password/reset?token=${second}`);
    const borrowed = await b.post('/password/reset', {
      ...formsOf(secondPage).reset.fields,
      factor_proof: proof,
      password: 'jill-new-password',
      confirm: 'jill-new-password',
    });
    expect(borrowed.status).toBe(401);
    expect(borrowed.html).toContain('name="code"');
  });

  test('the options of a link that is not valid are refused, and a user without a passkey is offered none', async () => {
    await server.user('kate', 'kate-password-1', { email: 'kate@example.com' });
    const token = await linkFor('kate');
    const b = new ResetBrowser(server, freshAddress());
    const page = await b.open(`/password/reset?token=${token}`);
    expect(page.html).not.toContain('data-passkey');
    const csrf = formsOf(page).reset.fields.csrf_token;
    expect((await b.post('/passkey/options', { csrf_token: csrf, purpose: 'reset', token })).status).toBe(400);
    expect((await b.post('/passkey/options', { csrf_token: csrf, purpose: 'reset', token: 'A'.repeat(43) })).status).toBe(400);
  });
});
