import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PEOPLE } from '../fixtures/ldap/directory.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bindsAs, ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { freshAddress, linkIn, MailServer, ResetBrowser } from '../password-reset/harness.ts';

const SAME_ANSWER = 'If an account exists for what you typed';

/**
 * docs/password-reset-by-mail.md, "Forgotten password", for a directory user who has never signed in through Latchkey (so
 * has no local record): an enterprise's users forget their directory password before their first
 * sign-in as often as after it. A real slapd with ppolicy, a real SMTP receiver.
 */
describe.each(databaseKinds)('reset by mail for a directory user never seen before, on %s', (kind) => {
  let slapd: Slapd;
  let smtp: MailServer;
  let server: TestServer;
  let client: { clientId: string; clientSecret: string | null };
  let n = 0;

  const binds = (uid: string, password: string) => bindsAs(slapd, `uid=${uid},${PEOPLE}`, password);

  async function person(): Promise<{ uid: string; password: string; mail: string }> {
    const uid = `never-seen-${kind}-${++n}`;
    const mail = `${uid}@example.org`;
    await slapd.add({
      dn: `uid=${uid},${PEOPLE}`,
      attrs: { objectClass: 'inetOrgPerson', uid, cn: uid, sn: uid, mail, userPassword: 'forgotten-Password-1' },
    });
    return { uid, password: 'forgotten-Password-1', mail };
  }

  const grant = (username: string, password: string) =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password, scope: 'openid' },
      { authorization: basic(client.clientId, client.clientSecret!) },
    );

  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true, policy: { pwdMinLength: '8', pwdCheckQuality: '2' }, serviceWritesPasswords: true });
    smtp = await MailServer.start();
    server = await startTestServer(kind, {
      trustProxy: '1',
      passwordReset: { enabled: true },
      smtp: { url: smtp.url, from: 'Latchkey <sso@example.com>' },
      ...ldapChain(ldapBackendConfig(slapd, { passwordReset: true })),
    });
    client = await server.client({ grantTypes: ['password'], scopes: ['openid'] });
  });
  afterAll(async () => {
    await server?.stop();
    await smtp?.close();
    await slapd?.destroy();
  });

  test("the directory is asked for the name: the mail goes to its address, and the new password is the directory's", async () => {
    const u = await person();
    expect(await server.ctx.users.findByUsername('corp', u.uid)).toBeUndefined();

    const browser = new ResetBrowser(server, freshAddress());
    const asked = await browser.requestReset(u.uid);
    expect(asked.status).toBe(200);
    expect(asked.html).toContain(SAME_ANSWER);
    const { token } = linkIn(await smtp.nth(u.mail, 1));

    const refused = await browser.reset(token, { password: 'short', confirm: 'short' });
    expect(refused.status).toBe(400);
    expect(await binds(u.uid, u.password)).toBe(true);

    const done = await browser.reset(token, { password: 'chosen-Password-9', confirm: 'chosen-Password-9' });
    expect(done.status).toBe(200);
    expect(await binds(u.uid, 'chosen-Password-9')).toBe(true);
    expect(await binds(u.uid, u.password)).toBe(false);
    expect((await grant(u.uid, 'chosen-Password-9')).status).toBe(200);
    expect((await grant(u.uid, u.password)).status).toBe(400);
  });

  test("a link mailed to the old address dies when a sign-in brings the directory's new email", async () => {
    const u = await person();
    const browser = new ResetBrowser(server, freshAddress());
    expect((await browser.requestReset(u.uid)).status).toBe(200);
    const { token } = linkIn(await smtp.nth(u.mail, 1));
    // The directory's administrator gives the user another mailbox; their next sign-in reads it.
    await slapd.modify(`uid=${u.uid},${PEOPLE}`, 'mail', [`moved-${u.mail}`]);
    expect((await grant(u.uid, u.password)).status).toBe(200);
    const late = await browser.reset(token, { password: 'chosen-Password-9', confirm: 'chosen-Password-9' });
    expect(late.status).toBe(400);
    expect(await binds(u.uid, u.password)).toBe(true);
  });

  const outcomes = async () =>
    (await server.sql('audit_events').where({ kind: 'password_reset.requested' }).orderBy('id').select('details')).map(
      (r) => (typeof r.details === 'string' ? JSON.parse(r.details) : r.details) as { outcome: string },
    );

  test('a name the directory does not hold gets the same answer and no mail', async () => {
    const before = smtp.mails.length;
    const asked = await new ResetBrowser(server, freshAddress()).requestReset('nobody-in-the-directory');
    expect(asked.status).toBe(200);
    expect(asked.html).toContain(SAME_ANSWER);
    await server.ctx.passwordReset.settled();
    expect((await outcomes()).at(-1)).toEqual({ outcome: 'unknown' });
    expect(smtp.mails.length).toBe(before);
  });

  test('an account the directory has locked gets no link, and no local record is made for it', async () => {
    const u = await person();
    await slapd.modify(`uid=${u.uid},${PEOPLE}`, 'pwdAccountLockedTime', ['000001010000Z']);
    const asked = await new ResetBrowser(server, freshAddress()).requestReset(u.uid);
    expect(asked.html).toContain(SAME_ANSWER);
    await server.ctx.passwordReset.settled();
    expect((await outcomes()).at(-1)).toEqual({ outcome: 'unknown' });
    expect(smtp.to(u.mail)).toHaveLength(0);
    expect(await server.ctx.users.findByUsername('corp', u.uid)).toBeUndefined();
  });
});
