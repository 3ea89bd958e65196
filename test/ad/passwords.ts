import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Attribute } from 'ldapts';
import { ldapConfig } from '../../plugins/ldap/config.ts';
import { AccountBrowser } from '../helpers/account.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import type { DatabaseKind } from '../helpers/databases.ts';
import { Browser, exchangeCode, type CodeFlowClient } from '../helpers/flow.ts';
import { locationQuery } from '../helpers/http.ts';
import { AD_BASE_DN } from '../helpers/samba.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapChain } from '../helpers/slapd.ts';
import { freshAddress, linkIn, MailServer, ResetBrowser } from '../password-reset/harness.ts';
import { people, PEOPLE, SERVICE_DN } from './directory.ts';
import { adConfig, dc, refresh, Servers, signIn, startTlsConfig } from './harness.ts';

/** 100 ns ticks, negative, as AD's PSO durations are written. */
const ticks = (seconds: number) => String(-seconds * 10_000_000);
const DAY = 86_400;

const dnOf = (sam: string) => `CN=${sam},${PEOPLE}`;

/** A fresh AD user, with a password of their own, under a PSO made for them (the rules under test). */
async function adUser(
  sam: string,
  password: string,
  rules: { minAge?: number; maxAge?: number; mustChange?: boolean; mail?: string } = {},
): Promise<void> {
  await dc().asAdmin(async (client) => {
    await client.add(dnOf(sam), [
      new Attribute({ type: 'objectClass', values: ['top', 'person', 'organizationalPerson', 'user'] }),
      new Attribute({ type: 'sAMAccountName', values: [sam] }),
      new Attribute({ type: 'displayName', values: [sam] }),
      new Attribute({ type: 'unicodePwd', values: [Buffer.from(`"${password}"`, 'utf16le')] }),
      new Attribute({ type: 'userAccountControl', values: ['512'] }),
      ...(rules.mustChange ? [new Attribute({ type: 'pwdLastSet', values: ['0'] })] : []),
      ...(rules.mail ? [new Attribute({ type: 'mail', values: [rules.mail] })] : []),
    ]);
    await client.add(`CN=rules-${sam},CN=Password Settings Container,CN=System,${AD_BASE_DN}`, {
      objectClass: 'msDS-PasswordSettings',
      'msDS-PasswordSettingsPrecedence': '5',
      'msDS-PasswordReversibleEncryptionEnabled': 'FALSE',
      'msDS-PasswordHistoryLength': '3',
      'msDS-PasswordComplexityEnabled': 'TRUE',
      'msDS-MinimumPasswordLength': '8',
      'msDS-MinimumPasswordAge': ticks(rules.minAge ?? 0),
      'msDS-MaximumPasswordAge': ticks(rules.maxAge ?? 60 * DAY),
      'msDS-LockoutThreshold': '0',
      'msDS-LockoutObservationWindow': ticks(1800),
      'msDS-LockoutDuration': ticks(1800),
      'msDS-PSOAppliesTo': dnOf(sam),
    });
  });
}

/**
 * docs/identity-backends.md against Active Directory (Samba): `unicodePwd` delete + add bound as the user over LDAPS;
 * complexity, history and minimum age refused in words; `pwdLastSet = 0` (773) and an expired password
 * (532) changed at sign-in; resets (`unicodePwd` replaced by the service account, given the Reset
 * Password right as docs/identity-backends.md says) from the admin API and by mail; the expiry warning from
 * `msDS-UserPasswordExpiryTimeComputed`. Every write is checked with a bind straight to the DC.
 */
export function passwordTests(kind: DatabaseKind): void {
  describe(`AD passwords on ${kind}`, () => {
    const servers = new Servers(kind);
    let server: TestServer;
    let client: CodeFlowClient;
    const query = () => ({
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: 'code',
      scope: 'openid',
      state: 's',
    });
    /** The DC's own answer to a bind: `ok`, or its `data` code (52e wrong, 532 expired, 773 must change). */
    const bindAnswer = async (sam: string, password: string) => {
      const raw = await dc().rawBind(dnOf(sam), password);
      if (raw === 'success') return 'ok';
      return /data ([0-9a-f]{3})/.exec(raw)?.[1] ?? raw;
    };

    beforeAll(async () => {
      server = await servers.start(adConfig({ passwordChange: true, passwordReset: true }));
      client = await server.client({ grantTypes: ['authorization_code', 'password'], scopes: ['openid'] });
      // What docs/identity-backends.md tells operators: the service account may reset the passwords of the people's OU.
      await dc().grantResetPassword(SERVICE_DN, PEOPLE);
    });
    afterAll(() => servers.stopAll());

    test('AD writes passwords only over TLS: a plain ldap:// config is refused at start', () => {
      const plain = ldapConfig.safeParse({ ...adConfig({ passwordChange: true }), url: dc().ldapUrl });
      expect(plain.success).toBe(false);
      expect(JSON.stringify(plain.error?.issues)).toContain('Active Directory writes passwords only over ldaps:// or startTLS: true');
      expect(ldapConfig.safeParse({ ...adConfig({ passwordChange: true }), url: dc().ldapUrl, startTLS: true }).success).toBe(true);
    });

    test('the account page changes the password as the user; complexity and history are refused in words', async () => {
      await adUser('pat', 'Pat-First-Pw1');
      const browser = new AccountBrowser(server);
      expect((await browser.signInAtAccount('pat', 'Pat-First-Pw1')).html).toContain('Signed in as');
      const change = (old: string, next: string) =>
        browser.post('password', { password: old, new_password: next, new_password_again: next });

      const simple = await change('Pat-First-Pw1', 'simplesimple');
      expect(simple.status).toBe(400);
      expect(simple.html).toMatch(/does not meet the complexity rules|password rules/);
      const short = await change('Pat-First-Pw1', 'Ab1-x');
      expect(short.status).toBe(400);
      expect(short.html).toMatch(/too short|password rules/);
      const wrong = await change('Not-Pats-Pw1', 'Pat-Second-Pw2');
      expect(wrong.status).toBe(401);
      expect(await bindAnswer('pat', 'Pat-First-Pw1')).toBe('ok');

      const done = await change('Pat-First-Pw1', 'Pat-Second-Pw2');
      expect(done.html).toContain('Your password is changed in the directory');
      expect(await bindAnswer('pat', 'Pat-Second-Pw2')).toBe('ok');
      // (Samba keeps taking the previous password for a while, as AD does for NTLM: the history refusal
      // below is what proves it was replaced.)

      const reused = await change('Pat-Second-Pw2', 'Pat-First-Pw1');
      expect(reused.status).toBe(400);
      expect(reused.html).toMatch(/used before|password rules/);
      expect(await bindAnswer('pat', 'Pat-Second-Pw2')).toBe('ok');
    });

    test('a password changed too recently (minimum age) is refused, and stays', async () => {
      await adUser('yan', 'Yan-First-Pw1', { minAge: DAY });
      const browser = new AccountBrowser(server);
      await browser.signInAtAccount('yan', 'Yan-First-Pw1');
      const young = await browser.post('password', {
        password: 'Yan-First-Pw1',
        new_password: 'Yan-Second-Pw2',
        new_password_again: 'Yan-Second-Pw2',
      });
      expect(young.status).toBe(400);
      expect(young.html).toMatch(/changed too recently|password rules/);
      expect(await bindAnswer('yan', 'Yan-First-Pw1')).toBe('ok');
    });

    test('pwdLastSet = 0 (773): a new password at sign-in, then the code', async () => {
      await adUser('mia', 'Mia-First-Pw1', { mustChange: true });
      expect(await bindAnswer('mia', 'Mia-First-Pw1')).toBe('773');
      const browser = new Browser(server);
      const ask = await browser.signIn(query(), 'mia', 'Mia-First-Pw1');
      expect(ask.status).toBe(200);
      const html = await ask.text();
      expect(html).toContain('must be changed');
      const done = await browser.submit(new Response(html), { new_password: 'Mia-Second-Pw2', new_password_again: 'Mia-Second-Pw2' });
      expect(done.status).toBe(303);
      expect((await exchangeCode(server, client, locationQuery(done).code!)).status).toBe(200);
      expect(await bindAnswer('mia', 'Mia-Second-Pw2')).toBe('ok');
      // No longer "must change": the right old password is not told 773 any more.
      expect(await bindAnswer('mia', 'Mia-First-Pw1')).not.toBe('773');
    });

    test('admin setUserPassword resets an AD user with the service account; a policy refusal is told in words and writes nothing', async () => {
      await adUser('rex', 'Rex-First-Pw1');
      const before = await signIn(server, 'rex', 'Rex-First-Pw1');
      expect(before.status).toBe(200);
      expect(before.body.refresh_token).toEqual(expect.any(String));
      const [rex] = await server.sql('users').where({ username: 'rex' }).select('id');
      expect(rex).toBeDefined();
      const admin = (await adminCliToken(server, 'alice', people.alice.password)).access_token;
      const setPassword = (password: string) =>
        graphqlPost(server, admin, `mutation($id: ID!, $password: String!) { setUserPassword(id: $id, password: $password) }`, {
          id: rex.id,
          password,
        });

      const simple = await setPassword('simplesimple');
      expect(simple.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(simple.errors?.[0]?.message).toMatch(/does not meet the complexity rules|password rules/);
      const short = await setPassword('Ab1-x');
      expect(short.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(short.errors?.[0]?.message).toMatch(/too short|password rules/);
      expect(await bindAnswer('rex', 'Rex-First-Pw1')).toBe('ok');

      const set = await setPassword('Rex-Reset-Pw2');
      expect(set.errors).toBeUndefined();
      expect(set.data?.setUserPassword).toBe(true);
      expect(await bindAnswer('rex', 'Rex-Reset-Pw2')).toBe('ok');
      expect((await signIn(server, 'rex', 'Rex-Reset-Pw2')).status).toBe(200);
      // The reset ended what rex held before it.
      expect((await refresh(server, before.body.refresh_token!)).status).toBe(400);
    });

    test('a forgotten password reset by mail over StartTLS, written with the service account', async () => {
      const smtp = await MailServer.start();
      const mailing = await startTestServer(kind, {
        ...ldapChain(startTlsConfig({ passwordReset: true })),
        trustProxy: '1',
        passwordReset: { enabled: true },
        smtp: { url: smtp.url, from: 'Latchkey <sso@example.com>' },
      });
      try {
        await adUser('ros', 'Ros-First-Pw1', { mail: 'ros@latchkey.test' });
        // Latchkey offers a reset to a directory user it knows, with the address the directory gave.
        expect((await signIn(mailing, 'ros', 'Ros-First-Pw1')).status).toBe(200);
        const browser = new ResetBrowser(mailing, freshAddress());
        expect((await browser.requestReset('ros')).status).toBe(200);
        const { token } = linkIn(await smtp.nth('ros@latchkey.test', 1));

        const simple = await browser.reset(token, { password: 'simplesimple', confirm: 'simplesimple' });
        expect(simple.status).toBe(400);
        expect(simple.html).toMatch(/does not meet the complexity rules|password rules/);
        expect(await bindAnswer('ros', 'Ros-First-Pw1')).toBe('ok');

        const done = await browser.reset(token, { password: 'Ros-Reset-Pw2', confirm: 'Ros-Reset-Pw2' });
        expect(done.status).toBe(200);
        expect(await bindAnswer('ros', 'Ros-Reset-Pw2')).toBe('ok');
      } finally {
        await mailing.stop();
        await smtp.close();
      }
    });

    test('an expired password (532): a new password at sign-in, then the code', async () => {
      // A two-day maximum age (Samba computes no expiry for a day or less), and the last change three
      // days back, written raw: Samba refuses any `pwdLastSet` but 0 or -1, even under the relax control.
      await adUser('exa', 'Exa-First-Pw1', { maxAge: 2 * DAY });
      const threeDaysAgo = (BigInt(Date.now() - 3 * DAY * 1000) + 11_644_473_600_000n) * 10_000n; // FILETIME: 100 ns since 1601
      await dc().modifyRaw(`dn: ${dnOf('exa')}\nchangetype: modify\nreplace: pwdLastSet\npwdLastSet: ${threeDaysAgo}\n`);
      expect(await bindAnswer('exa', 'Exa-First-Pw1')).toBe('532');
      expect(await bindAnswer('exa', 'Not-Exas-Pw1')).toBe('52e');

      const browser = new Browser(server);
      const wrong = await browser.signIn(query(), 'exa', 'Not-Exas-Pw1');
      expect(await wrong.text()).not.toContain('Your password has expired');
      // The password grant issues nothing to an expired password, and says why.
      const grant = await signIn(server, 'exa', 'Exa-First-Pw1');
      expect(grant.status).toBe(400);
      expect(grant.body.error).toBe('invalid_grant');
      expect(grant.body.error_description).toMatch(/password has expired/);
      const ask = await browser.signIn(query(), 'exa', 'Exa-First-Pw1');
      expect(ask.status).toBe(200);
      const html = await ask.text();
      expect(html).toContain('Your password has expired');
      const done = await browser.submit(new Response(html), { new_password: 'Exa-Second-Pw2', new_password_again: 'Exa-Second-Pw2' });
      // The new password lives two days too, within the warning days: the notice, then onward to the code.
      expect(done.status).toBe(200);
      const notice = await done.text();
      expect(notice).toContain('Your password expires soon');
      const onward = await browser.submit(new Response(notice), {});
      expect(onward.status).toBe(303);
      expect((await exchangeCode(server, client, locationQuery(onward).code!)).status).toBe(200);
      expect(await bindAnswer('exa', 'Exa-Second-Pw2')).toBe('ok');
      expect((await signIn(server, 'exa', 'Exa-Second-Pw2')).status).toBe(200);
    });

    test('a password that expires within the warning days is told after signing in', async () => {
      await adUser('wes', 'Wes-First-Pw1', { maxAge: 10 * DAY });
      const browser = new Browser(server);
      const notice = await browser.signIn(query(), 'wes', 'Wes-First-Pw1');
      expect(notice.status).toBe(200);
      const html = await notice.text();
      expect(html).toContain('Your password expires soon');
      expect(html).toMatch(/in (9|10) days/);
      const onward = await browser.submit(new Response(html), {});
      expect(onward.status).toBe(303);
    });
  });
}
