import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PEOPLE, SERVICE_DN } from '../fixtures/ldap/directory.ts';
import { AccountBrowser, firstForm } from '../helpers/account.ts';
import { freezeClock, resetClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { codeAt } from '../helpers/totp.ts';
import { Browser, exchangeCode, type CodeFlowClient } from '../helpers/flow.ts';
import { basic, locationQuery, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bindsAs, ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

const DAY_S = 86_400;

/** The default policy: 8 characters or more, the last 3 remembered, 60 days' life, warned 30 days ahead. */
const POLICY = {
  pwdMinLength: '8',
  pwdCheckQuality: '2',
  pwdInHistory: '3',
  pwdMaxAge: String(60 * DAY_S),
  pwdExpireWarning: String(30 * DAY_S),
  pwdGraceAuthNLimit: '3',
  pwdMustChange: 'TRUE',
};

/** ppolicy's time format. */
const generalizedTime = (ms: number) => `${new Date(ms).toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;

/**
 * docs/identity-backends.md against OpenLDAP with ppolicy: a directory user changes their password at the account page
 * and at a sign-in the directory refuses as expired or must-change; the policy's refusals are told in
 * words; a password about to expire is told after signing in. Every write is checked by binding to the
 * directory directly.
 */
describe.each(databaseKinds)('directory passwords (OpenLDAP ppolicy) on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let client: CodeFlowClient;
  let n = 0;

  const binds = (uid: string, password: string) => bindsAs(slapd, `uid=${uid},${PEOPLE}`, password);

  /** A fresh user of the directory for one test. */
  async function person(password = 'first-Password-1'): Promise<{ uid: string; dn: string; password: string }> {
    const uid = `pw-user-${kind}-${++n}`;
    const dn = `uid=${uid},${PEOPLE}`;
    await slapd.add({
      dn,
      attrs: { objectClass: 'inetOrgPerson', uid, cn: uid, sn: uid, mail: `${uid}@example.org`, userPassword: password },
    });
    return { uid, dn, password };
  }

  const authorizeQuery = () => ({
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    response_type: 'code',
    scope: 'openid',
    state: 'st',
  });

  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true, policy: POLICY, serviceWritesPasswords: true });
    // A second policy, for users whose password may change once a day at most.
    await slapd.add({
      dn: `cn=daily-policy,ou=services,dc=example,dc=org`,
      attrs: {
        objectClass: ['device', 'pwdPolicy'],
        cn: 'daily-policy',
        pwdAttribute: 'userPassword',
        pwdMinAge: String(DAY_S),
        pwdCheckQuality: '2',
        pwdMinLength: '8',
      },
    });
    server = await startTestServer(kind, ldapChain(ldapBackendConfig(slapd, { passwordChange: true, passwordReset: true })));
    client = await server.client({ grantTypes: ['authorization_code', 'password'], scopes: ['openid'] });
  });
  afterAll(async () => {
    await server?.stop();
    await slapd?.destroy();
  });

  test('the account page changes the password in the directory, bound as the user', async () => {
    const u = await person();
    const browser = new AccountBrowser(server);
    expect((await browser.signInAtAccount(u.uid, u.password)).html).toContain('Signed in as');
    const page = await browser.post('password', {
      password: u.password,
      new_password: 'second-Password-2',
      new_password_again: 'second-Password-2',
    });
    expect(page.status).toBe(200);
    expect(page.html).toContain('Your password is changed in the directory');
    expect(await binds(u.uid, 'second-Password-2')).toBe(true);
    expect(await binds(u.uid, u.password)).toBe(false);
    const user = await server.sql('users').where({ username: u.uid }).first('id');
    expect(await server.sql('audit_events').where({ kind: 'account.password_changed', user_id: user.id }).first()).toBeDefined();
  });

  test('the policy refusals are told in words, and nothing changes', async () => {
    const u = await person();
    const browser = new AccountBrowser(server);
    await browser.signInAtAccount(u.uid, u.password);
    const change = (newPassword: string, again = newPassword, old = u.password) =>
      browser.post('password', { password: old, new_password: newPassword, new_password_again: again });

    const short = await change('short');
    expect(short.status).toBe(400);
    expect(short.html).toContain('The new password is too short.');

    const reused = await change(u.password);
    expect(reused.status).toBe(400);
    expect(reused.html).toContain('was used before');

    const mismatch = await change('third-Password-3', 'third-Password-4');
    expect(mismatch.status).toBe(400);
    expect(mismatch.html).toContain('The two new passwords are not the same.');

    const wrongOld = await change('third-Password-3', 'third-Password-3', 'not-my-password');
    expect(wrongOld.status).toBe(401);
    expect(wrongOld.html).toContain('The current password is not right.');

    expect(await binds(u.uid, u.password)).toBe(true);
    const user = await server.sql('users').where({ username: u.uid }).first('id');
    const refusals = await server
      .sql('audit_events')
      .where({ kind: 'account.password_change_refused', user_id: user.id })
      .select('details');
    // The wrong current password was refused as a counted sign-in before anything was written.
    expect(refusals.map((r: { details: string }) => JSON.parse(r.details).refusal).sort()).toEqual(['in_history', 'too_short']);

    const long = await change('x'.repeat(1025));
    expect(long.status).toBe(400);
    expect(long.html).toContain('The new password must be 1 to 1024 characters.');
  });

  test('the current password at the account page is counted: after 5 wrong ones it waits, even the right one, and nothing is written', async () => {
    const u = await person();
    const browser = new AccountBrowser(server);
    await browser.signInAtAccount(u.uid, u.password);
    const change = (old: string) =>
      browser.post('password', { password: old, new_password: 'second-Password-2', new_password_again: 'second-Password-2' });
    // The first delay is one second: the server's clock stands still so that all of these fall inside it.
    freezeClock();
    try {
      for (let i = 0; i < 5; i++) expect((await change(`guess-${i}`)).status).toBe(401);
      const waits = await change(u.password);
      expect(waits.status).toBe(429);
      expect(waits.html).toContain('Your password is unchanged.');
    } finally {
      resetClock();
    }
    expect(await binds(u.uid, u.password)).toBe(true);
    expect(await binds(u.uid, 'second-Password-2')).toBe(false);
  });

  test('a password changed too recently is refused as such', async () => {
    const u = await person();
    await slapd.modify(u.dn, 'pwdPolicySubentry', ['cn=daily-policy,ou=services,dc=example,dc=org']);
    const browser = new AccountBrowser(server);
    await browser.signInAtAccount(u.uid, u.password);
    // The password was set when the entry was made, less than a day ago.
    const young = await browser.post('password', {
      password: u.password,
      new_password: 'second-Password-2',
      new_password_again: 'second-Password-2',
    });
    expect(young.status).toBe(400);
    expect(young.html).toContain('The password was changed too recently');
    expect(await binds(u.uid, u.password)).toBe(true);
    expect(await binds(u.uid, 'second-Password-2')).toBe(false);
  });

  test('a password that must change after a reset: a new one at sign-in, then on to the code', async () => {
    const u = await person();
    await slapd.modify(u.dn, 'pwdReset', ['TRUE'], { relax: true });
    const browser = new Browser(server);

    // A wrong password never reaches the step.
    const wrong = await browser.signIn(authorizeQuery(), u.uid, 'not-the-password');
    expect(wrong.status).toBe(401);
    const wrongHtml = await wrong.text();
    expect(wrongHtml).toContain('Invalid username or password.');
    expect(wrongHtml).not.toContain('new password');

    const ask = await browser.signIn(authorizeQuery(), u.uid, u.password);
    expect(ask.status).toBe(200);
    const askHtml = await ask.text();
    expect(askHtml).toContain('must be changed');
    // The old password is not in the page.
    expect(askHtml).not.toContain(u.password);

    const mismatch = await browser.submit(new Response(askHtml), {
      new_password: 'second-Password-2',
      new_password_again: 'other-Password-2',
    });
    expect(mismatch.status).toBe(400);
    const mismatchHtml = await mismatch.text();
    expect(mismatchHtml).toContain('The two new passwords are not the same.');

    const done = await browser.submit(new Response(mismatchHtml), {
      new_password: 'second-Password-2',
      new_password_again: 'second-Password-2',
    });
    expect(done.status).toBe(303);
    const token = await exchangeCode(server, client, locationQuery(done).code!);
    expect(token.status).toBe(200);
    expect(await binds(u.uid, 'second-Password-2')).toBe(true);
    expect(await binds(u.uid, u.password)).toBe(false);
  });

  test('a new password at sign-in ends the other sessions and tokens, and finishes as a counted sign-in', async () => {
    const u = await person();
    // Elsewhere: a session at the account page, and a token from the password grant.
    const elsewhere = new AccountBrowser(server);
    expect((await elsewhere.signInAtAccount(u.uid, u.password)).html).toContain('Signed in as');
    const grant = (await (
      await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: u.uid, password: u.password, scope: 'openid' },
        { authorization: basic(client.clientId, client.clientSecret!) },
      )
    ).json()) as { access_token: string };
    const me = () => fetch(`${server.url}/api/oauth/v20/me`, { headers: { authorization: `Bearer ${grant.access_token}` } });
    expect((await me()).status).toBe(200);
    await slapd.modify(u.dn, 'pwdReset', ['TRUE'], { relax: true });

    const browser = new Browser(server);
    const askHtml = await (await browser.signIn(authorizeQuery(), u.uid, u.password)).text();
    expect(askHtml).toContain('must be changed');
    const done = await browser.submit(new Response(askHtml), {
      new_password: 'second-Password-2',
      new_password_again: 'second-Password-2',
    });
    expect(done.status).toBe(303);
    expect(locationQuery(done).code).toBeDefined();

    expect(await elsewhere.signedIn()).toBe(false);
    expect((await me()).status).toBe(401);
    // The sign-in service's success: its event, and this browser's device cookie.
    const user = await server.sql('users').where({ username: u.uid }).first('id');
    const success = await server.sql('audit_events').where({ kind: 'login.success', user_id: user.id }).orderBy('id', 'desc').first();
    expect(JSON.parse(success.details)).toMatchObject({ amr: ['pwd'] });
    expect(browser.jar.header()).toContain('lk_device=');
  });

  test('a user with a second factor changes the password first, then gives the code', async () => {
    const u = await person();
    const account = new AccountBrowser(server);
    await account.signInAtAccount(u.uid, u.password);
    const { secret } = await account.enrolTotp();
    await slapd.modify(u.dn, 'pwdReset', ['TRUE'], { relax: true });

    // The change's pending sign-in is no second step: posted with a right code, it signs nobody in.
    const skipper = new Browser(server);
    const skipHtml = await (await skipper.signIn(authorizeQuery(), u.uid, u.password)).text();
    const skipped = await skipper.submit(new Response(skipHtml), { _action: 'mfa', code: codeAt(secret, serverNow() + 30_000) });
    expect(skipped.status).toBe(403);
    expect(skipped.headers.get('location')).toBeNull();

    const browser = new Browser(server);
    const askHtml = await (await browser.signIn(authorizeQuery(), u.uid, u.password)).text();
    expect(askHtml).toContain('must be changed');
    const second = await browser.submit(new Response(askHtml), {
      new_password: 'second-Password-2',
      new_password_again: 'second-Password-2',
    });
    expect(second.status).toBe(200);
    const secondHtml = await second.text();
    expect(secondHtml).toContain('name="code"');
    expect(await binds(u.uid, 'second-Password-2')).toBe(true);
    // The next period's code: the one used at enrolment is not taken twice.
    const done = await browser.submit(new Response(secondHtml), { code: codeAt(secret, serverNow() + 30_000) });
    expect(done.status).toBe(303);
    expect(locationQuery(done).code).toBeDefined();
  });

  test("the pending change is this browser's, and used once", async () => {
    const u = await person();
    await slapd.modify(u.dn, 'pwdReset', ['TRUE'], { relax: true });
    const browser = new Browser(server);
    const askHtml = await (await browser.signIn(authorizeQuery(), u.uid, u.password)).text();
    // Another browser posting the same form is sent back to sign in.
    const other = new Browser(server);
    const otherPage = await other.authorize(authorizeQuery());
    const stolen = await postForm(
      `${server.url}/oauth/v20/authorize`,
      {
        ...firstForm(askHtml),
        csrf_token: firstForm(await otherPage.text()).csrf_token,
        new_password: 'second-Password-2',
        new_password_again: 'second-Password-2',
      },
      { cookie: other.jar.header() },
    );
    expect(stolen.status).toBe(403);
    expect(await binds(u.uid, u.password)).toBe(true);
  });

  test('an expired password (in its grace logins) is changed at sign-in; the password grant refuses it', async () => {
    const u = await person();
    await slapd.modify(u.dn, 'pwdChangedTime', [generalizedTime(Date.now() - 61 * DAY_S * 1000)], { relax: true });

    const grant = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username: u.uid, password: u.password, scope: 'openid' },
      { authorization: basic(client.clientId, client.clientSecret!) },
    );
    expect(grant.status).toBe(400);
    expect(await grant.json()).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('the password has expired'),
    });

    const browser = new Browser(server);
    const ask = await browser.signIn(authorizeQuery(), u.uid, u.password);
    expect(ask.status).toBe(200);
    const askHtml = await ask.text();
    expect(askHtml).toContain('Your password has expired');
    const done = await browser.submit(new Response(askHtml), {
      new_password: 'renewed-Password-9',
      new_password_again: 'renewed-Password-9',
    });
    expect(done.status).toBe(303);
    expect(await binds(u.uid, 'renewed-Password-9')).toBe(true);
  });

  test('a reset (by mail, or an administrator) under pwdMustChange and pwdMinAge leaves the user able to sign in with it', async () => {
    const u = await person();
    const policyDn = `cn=reset-policy-${kind},ou=services,dc=example,dc=org`;
    await slapd.add({
      dn: policyDn,
      attrs: {
        objectClass: ['device', 'pwdPolicy'],
        cn: `reset-policy-${kind}`,
        pwdAttribute: 'userPassword',
        pwdMustChange: 'TRUE',
        pwdMinAge: String(DAY_S),
        pwdMinLength: '8',
      },
    });
    await slapd.modify(u.dn, 'pwdPolicySubentry', [policyDn]);
    // Set two days ago: pwdMinAge lets the service account reset it now.
    await slapd.modify(u.dn, 'pwdChangedTime', [generalizedTime(Date.now() - 2 * DAY_S * 1000)], { relax: true });
    const grant = (password: string) =>
      postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: u.uid, password, scope: 'openid' },
        { authorization: basic(client.clientId, client.clientSecret!) },
      );
    expect((await grant(u.password)).status).toBe(200);

    const user = (await server.ctx.users.findByUsername('corp', u.uid))!;
    expect(await server.ctx.identity.writePassword(user, { how: 'reset', newPassword: 'chosen-Password-7' })).toEqual({ ok: true });
    // Not "the password must be changed": the user chose this one, and pwdMinAge would refuse a change now.
    const after = await grant('chosen-Password-7');
    expect(await after.json()).toMatchObject({ access_token: expect.any(String) });
    const browser = new Browser(server);
    expect((await browser.signIn(authorizeQuery(), u.uid, 'chosen-Password-7')).status).toBe(303);
  });

  test('a password that expires within the warning days is told after signing in: change it now, or continue', async () => {
    const u = await person();
    await slapd.modify(u.dn, 'pwdChangedTime', [generalizedTime(Date.now() - 50 * DAY_S * 1000)], { relax: true });
    const browser = new Browser(server);
    const notice = await browser.signIn(authorizeQuery(), u.uid, u.password);
    expect(notice.status).toBe(200);
    const html = await notice.text();
    expect(html).toContain('Your password expires soon');
    expect(html).toMatch(/in (9|10) days/);
    expect(html).toContain('href="/account#h-password"');
    const onward = await browser.submit(new Response(html), {});
    expect(onward.status).toBe(303);
    expect((await exchangeCode(server, client, locationQuery(onward).code!)).status).toBe(200);

    // Under prompt=login and max_age=0 the notice's Continue goes on with the sign-in it follows.
    const strict = new Browser(server);
    const strictNotice = await strict.signIn({ ...authorizeQuery(), prompt: 'login', max_age: '0' }, u.uid, u.password);
    expect(await strictNotice.clone().text()).toContain('Your password expires soon');
    const strictOnward = await strict.submit(strictNotice, {});
    expect(strictOnward.status).toBe(303);
    expect(locationQuery(strictOnward).code).toBeDefined();

    // A password far from expiry signs in without the notice.
    const fresh = await person();
    const straight = await new Browser(server).signIn(authorizeQuery(), fresh.uid, fresh.password);
    expect(straight.status).toBe(303);
  });

  test('where the backend does not let users change their password, the expiry notice offers no "Change it now"', async () => {
    const u = await person();
    await slapd.modify(u.dn, 'pwdChangedTime', [generalizedTime(Date.now() - 50 * DAY_S * 1000)], { relax: true });
    const readOnly = await startTestServer(kind, ldapChain(ldapBackendConfig(slapd, { passwordChange: false })));
    try {
      const app = await readOnly.client({ scopes: ['openid'] });
      const query = { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', scope: 'openid', state: 'st' };
      const notice = await new Browser(readOnly).signIn(query, u.uid, u.password);
      const html = await notice.text();
      expect(html).toContain('Your password expires soon');
      expect(html).not.toContain('href="/account#h-password"');
      expect(html).toContain('Ask your administrator');
    } finally {
      await readOnly.stop();
    }
  });

  test('a user with a second factor whose password expires soon is told after the code', async () => {
    const u = await person();
    const account = new AccountBrowser(server);
    await account.signInAtAccount(u.uid, u.password);
    const { secret } = await account.enrolTotp();
    await slapd.modify(u.dn, 'pwdChangedTime', [generalizedTime(Date.now() - 50 * DAY_S * 1000)], { relax: true });
    const browser = new Browser(server);
    const second = await browser.signIn(authorizeQuery(), u.uid, u.password);
    const secondHtml = await second.text();
    expect(secondHtml).toContain('name="code"');
    const notice = await browser.submit(new Response(secondHtml), { code: codeAt(secret, serverNow() + 30_000) });
    expect(notice.status).toBe(200);
    const html = await notice.text();
    expect(html).toContain('Your password expires soon');
    const onward = await browser.submit(new Response(html), {});
    expect(onward.status).toBe(303);
    expect(locationQuery(onward).code).toBeDefined();
  });

  test('the directory down in the middle of a change: a 503 page, and the old password still works', async () => {
    const u = await person();
    const browser = new AccountBrowser(server);
    await browser.signInAtAccount(u.uid, u.password);
    const { html } = await browser.open();
    await slapd.stop();
    try {
      const page = await browser.send('/account', {
        ...firstForm(html),
        _action: 'password',
        csrf_token: firstForm(html).csrf_token,
        password: u.password,
        new_password: 'second-Password-2',
        new_password_again: 'second-Password-2',
      });
      expect(page.status).toBe(503);
      expect(page.html).toContain('The directory is unreachable right now. Your password is unchanged');
    } finally {
      await slapd.start();
    }
    expect(await binds(u.uid, u.password)).toBe(true);
    const user = await server.sql('users').where({ username: u.uid }).first('id');
    expect(await server.sql('audit_events').where({ kind: 'account.password_change_failed', user_id: user.id }).first()).toBeDefined();
  });
});

/** The service account's reset (docs/identity-backends.md's forgotten password and `setUserPassword`), at the plugin. */
describe("the LDAP backend's resetPassword (OpenLDAP)", () => {
  let slapd: Slapd;
  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true, policy: POLICY, serviceWritesPasswords: true });
  });
  afterAll(async () => {
    await slapd?.destroy();
  });

  test('writes with the service account; the policy still refuses a short one', async () => {
    const { default: plugin } = await import('../../plugins/ldap/index.ts');
    const pino = (await import('pino')).default;
    const backend = await plugin.create(plugin.configSchema.parse(ldapBackendConfig(slapd, { passwordReset: true })), {
      id: 'corp',
      logger: pino({ level: 'silent' }),
      db: undefined as never,
      localUsers: undefined as never,
    });
    try {
      const check = await backend.checkPassword('bob', 'bob-directory-pw');
      const known = { username: 'bob', externalId: check.identity!.externalId };
      expect(backend.changePassword).toBeUndefined();
      expect(await backend.resetPassword!(known, 'short')).toMatchObject({ ok: false, refusal: 'too_short' });
      expect(await backend.resetPassword!(known, 'reset-Password-1')).toEqual({ ok: true });
      // pwdMustChange marked it `pwdReset`; the reset took the mark off, so no change is asked for.
      expect(await backend.checkPassword('bob', 'reset-Password-1')).toMatchObject({ validPassword: true, identity: { disabled: false } });
      expect((await backend.checkPassword('bob', 'bob-directory-pw')).validPassword).toBe(false);
      expect(await backend.resetPassword!({ ...known, externalId: 'someone-else' }, 'reset-Password-2')).toMatchObject({
        ok: false,
        refusal: 'refused',
      });
    } finally {
      await backend.close?.();
    }
    expect(SERVICE_DN).toContain('cn=latchkey');
  });
});
