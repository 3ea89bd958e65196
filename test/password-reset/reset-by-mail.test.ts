import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { AccountBrowser, recoveryCodesOf } from '../helpers/account.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { advanceClock, resetClock } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { basic, get, hiddenFields, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { DirectoryState, freshAddress, linkIn, MailServer, ResetBrowser, resetPlugin, staticPlugin } from './harness.ts';

const SAME_ANSWER = 'If an account exists for what you typed';

/** docs/password-reset-by-mail.md, "Forgotten password": reset links by mail, for database users and directories that allow it. */
describe.each(databaseKinds)('password reset by mail on %s', (kind) => {
  let server: TestServer;
  let smtp: MailServer;
  let directory: DirectoryState;
  let client: { clientId: string; clientSecret: string | null };

  const browser = () => new ResetBrowser(server, freshAddress());
  const auth = () => ({ authorization: basic(client.clientId, client.clientSecret!) });
  /** The password grant: the status and the answer (a refresh token when it worked). */
  const passwordGrant = async (username: string, password: string) => {
    const res = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password, scope: 'openid offline_access' },
      auth(),
    );
    return { status: res.status, body: (await res.json()) as { refresh_token?: string; error?: string } };
  };
  const refresh = async (refreshToken: string) =>
    (await postForm(`${server.url}/oauth/v20/token`, { grant_type: 'refresh_token', refresh_token: refreshToken }, auth())).status;
  const events = async (kind: string, userId?: string) =>
    (
      await server
        .sql('audit_events')
        .where({ kind, ...(userId ? { user_id: userId } : {}) })
        .select('details')
    ).map((r) =>
      typeof r.details === 'string' ? (JSON.parse(r.details) as Record<string, unknown>) : (r.details as Record<string, unknown>),
    );

  beforeAll(async () => {
    smtp = await MailServer.start();
    directory = new DirectoryState({ frank: { password: 'frank-directory-1', email: 'frank@corp.example' } });
    server = await startTestServer(kind, {
      trustProxy: '1',
      passwordReset: { enabled: true },
      smtp: { url: smtp.url, from: 'Latchkey <sso@example.com>' },
      identity: {
        backends: [
          { id: 'local', plugin: 'database', config: {} },
          { id: 'corp', plugin: resetPlugin, config: { file: directory.file } },
          {
            id: 'partners',
            plugin: staticPlugin,
            config: { users: { gina: { password: 'gina-password-1', email: 'gina@partner.example' } } },
          },
        ],
      },
    });
    client = await server.client({ grantTypes: ['password', 'refresh_token'], scopes: ['openid', 'offline_access'] });
  });
  afterEach(() => resetClock());
  afterAll(async () => {
    await server.stop();
    await smtp.close();
    directory.remove();
  });

  test('the login page links to "Forgot your password?"', async () => {
    const page = await new AccountBrowser(server).open('/account');
    expect(page.html).toContain('href="/password/forgot">Forgot your password?</a>');
  });

  test('request, mail, link, new password: the new one signs in, the old does not, sessions and tokens end', async () => {
    const userId = await server.user('erin', 'erin-password-1', { email: 'erin@example.com' });
    const session = new AccountBrowser(server);
    await session.signInAtAccount('erin', 'erin-password-1');
    expect(await session.signedIn()).toBe(true);
    const tokens = await passwordGrant('erin', 'erin-password-1');
    expect(tokens.status).toBe(200);

    const b = browser();
    const asked = await b.requestReset('erin');
    expect(asked.status).toBe(200);
    expect(asked.html).toContain(SAME_ANSWER);
    const mail = await smtp.nth('erin@example.com', 1);
    expect(mail.subject).toBe('Reset your password');
    const { link, token } = linkIn(mail);
    expect(link.startsWith(`${server.url}/password/reset?token=`)).toBe(true);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/); // 256 bits

    // Only the token's hash is stored.
    expect(await server.sql('password_reset_tokens').where({ token_hash: token }).first()).toBeUndefined();
    const hash = createHash('sha256').update(token).digest('base64url');
    expect(await server.sql('password_reset_tokens').where({ token_hash: hash, user_id: userId }).first()).toBeDefined();

    const form = await b.open(`/password/reset?token=${token}`);
    expect(form.status).toBe(200);
    expect(form.headers.get('referrer-policy')).toBe('no-referrer');
    expect(form.headers.get('cache-control')).toBe('no-store');
    expect(form.html).toContain('id="reset-username">erin<');
    expect(form.html).not.toContain('name="code"'); // no second factor

    const differ = await b.post('/password/reset', {
      ...hiddenFields(form.html),
      password: 'erin-new-password',
      confirm: 'erin-new-passwort',
    });
    expect(differ.status).toBe(400);
    expect(differ.html).toContain('The two passwords are not the same.');
    const short = await b.reset(token, { password: 'short', confirm: 'short' });
    expect(short.status).toBe(400);
    expect(short.html).toContain('The new password must be 8 to 1024 characters.');

    const done = await b.reset(token, { password: 'erin-new-password', confirm: 'erin-new-password' });
    expect(done.status).toBe(200);
    expect(done.html).toContain('Your new password is set');

    expect((await passwordGrant('erin', 'erin-password-1')).status).toBe(400);
    expect((await passwordGrant('erin', 'erin-new-password')).status).toBe(200);
    expect(await session.signedIn()).toBe(false);
    expect(await refresh(tokens.body.refresh_token!)).toBe(400);

    // Used once: the link is spent.
    const again = await b.open(`/password/reset?token=${token}`);
    expect(again.status).toBe(400);
    expect(again.html).toContain('This reset link is not valid');
    expect(
      (await b.post('/password/reset', { ...hiddenFields(form.html), password: 'x-another-pass', confirm: 'x-another-pass' })).status,
    ).toBe(400);

    expect(await events('password_reset.requested', userId)).toEqual([expect.objectContaining({ outcome: 'sent' })]);
    expect(await events('password_reset.done', userId)).toHaveLength(1);
    expect((await events('password_reset.failed', userId)).map((d) => d.reason)).toEqual(expect.arrayContaining(['mismatch', 'too_short']));
    // A spent link names nobody: its failure is recorded without a user.
    expect((await events('password_reset.failed')).map((d) => d.reason)).toContain('invalid_link');
    // The token reached no log line.
    expect(server.logs.join('\n')).not.toContain(token);
  });

  test('an email address works as well as a username', async () => {
    await server.user('hal', 'hal-password-1', { email: 'Hal@Example.com' });
    await browser().requestReset('hal@example.com');
    await server.ctx.passwordReset.settled();
    expect(smtp.mails.filter((m) => m.to.toLowerCase() === 'hal@example.com').map((m) => m.to)).toHaveLength(1);
    linkIn(smtp.mails.find((m) => m.to.toLowerCase() === 'hal@example.com')!);
  });

  test('an unknown account gets the very same answer, and no mail', async () => {
    await server.user('ivy', 'ivy-password-1', { email: 'ivy@example.com' });
    const before = smtp.mails.length;
    const unknown = await browser().requestReset('nobody-here');
    const known = await browser().requestReset('ivy');
    expect(unknown.status).toBe(known.status);
    expect(unknown.html).toBe(known.html);
    await smtp.nth('ivy@example.com', 1);
    await server.ctx.passwordReset.settled();
    expect(smtp.mails.length).toBe(before + 1);
    expect(await events('password_reset.requested')).toEqual(expect.arrayContaining([expect.objectContaining({ outcome: 'unknown' })]));
  });

  test('answers before any mail is sent: a mail server that is down changes nothing the requester sees', async () => {
    await server.user('jay', 'jay-password-1', { email: 'jay@example.com' });
    const normal = await browser().requestReset('nobody-at-all');
    await smtp.stop();
    try {
      const down = await browser().requestReset('jay');
      expect(down.status).toBe(200);
      expect(down.html).toBe(normal.html);
      await server.ctx.passwordReset.settled();
      await eventually('one log line', async () => server.logs.some((l) => l.includes('password reset mail not sent')));
      expect(server.logs.filter((l) => l.includes('password reset mail not sent'))).toHaveLength(1);
      expect(server.logs.join('\n')).not.toContain(smtp.url.replace('smtp://', 'smtp://x:'));
      const [jay] = await server.sql('users').where({ username: 'jay' }).select('id');
      expect(await events('password_reset.mail_failed', jay.id)).toHaveLength(1);
    } finally {
      await smtp.start();
    }
    expect(smtp.to('jay@example.com')).toHaveLength(0);
  });

  test('the answer does not wait for the mail: a mail server that hangs', async () => {
    await server.user('quinn', 'quinn-password-1', { email: 'quinn@example.com' });
    await smtp.stop('hang');
    try {
      const started = performance.now();
      const asked = await browser().requestReset('quinn');
      // Well under the mail's own timeouts (10 s to greet): the answer went out before the mail.
      expect(performance.now() - started).toBeLessThan(2000);
      expect(asked.status).toBe(200);
      expect(asked.html).toContain(SAME_ANSWER);
      // The mail is still on its way, after the answer: held by the mail server that says nothing.
      await eventually('the mail waiting on the mail server', async () => smtp.hanging > 0);
    } finally {
      await smtp.start(); // cuts the held connection: that mail fails
    }
    await server.ctx.passwordReset.settled();
    expect(smtp.to('quinn@example.com')).toHaveLength(0);
  });

  test('two submissions of one link at once: one sets the password, the other gets the 400 page', async () => {
    await server.user('rae', 'rae-password-1', { email: 'rae@example.com' });
    const b = browser();
    await b.requestReset('rae');
    const { token } = linkIn(await smtp.nth('rae@example.com', 1));
    const form = await b.open(`/password/reset?token=${token}`);
    const [one, two] = await Promise.all(
      ['rae-new-password-1', 'rae-new-password-2'].map((p) =>
        b.post('/password/reset', { ...hiddenFields(form.html), password: p, confirm: p }),
      ),
    );
    expect([one!.status, two!.status].sort()).toEqual([200, 400]);
    const winner = one!.status === 200 ? 'rae-new-password-1' : 'rae-new-password-2';
    const loser = one!.status === 200 ? 'rae-new-password-2' : 'rae-new-password-1';
    expect((await passwordGrant('rae', winner)).status).toBe(200);
    expect((await passwordGrant('rae', loser)).status).toBe(400);
  });

  test('a link expires after 15 minutes', async () => {
    await server.user('kim', 'kim-password-1', { email: 'kim@example.com' });
    const b = browser();
    await b.requestReset('kim');
    const { token } = linkIn(await smtp.nth('kim@example.com', 1));
    expect((await b.open(`/password/reset?token=${token}`)).status).toBe(200);
    advanceClock(14 * 60_000);
    const form = await b.open(`/password/reset?token=${token}`);
    expect(form.status).toBe(200);
    advanceClock(61_000);
    const late = await b.post('/password/reset', { ...hiddenFields(form.html), password: 'kim-new-password', confirm: 'kim-new-password' });
    expect(late.status).toBe(400);
    expect(late.html).toContain('it has expired');
    expect((await passwordGrant('kim', 'kim-password-1')).status).toBe(200);

    // The retention purge takes the expired link away.
    await server.ctx.retention.purgeNow();
    const hash = createHash('sha256').update(token).digest('base64url');
    expect(await server.sql('password_reset_tokens').where({ token_hash: hash }).first()).toBeUndefined();
  });

  test('a tampered, cut or missing token gets the same clear 400 page', async () => {
    await server.user('lee', 'lee-password-1', { email: 'lee@example.com' });
    const b = browser();
    await b.requestReset('lee');
    const { token } = linkIn(await smtp.nth('lee@example.com', 1));
    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    for (const bad of [flipped, token.slice(0, 20), '', 'x'.repeat(5000), `${token}'--`]) {
      const page = await b.open(`/password/reset?token=${encodeURIComponent(bad)}`);
      expect(page.status).toBe(400);
      expect(page.html).toContain('This reset link is not valid');
    }
    expect((await b.open(`/password/reset?token=${token}`)).status).toBe(200);
  });

  test('throttled per account: past the limit, the same answer and no mail', async () => {
    await server.user('mo', 'mo-password-1', { email: 'mo@example.com' });
    for (let i = 0; i < 4; i++) expect((await browser().requestReset('mo')).html).toContain(SAME_ANSWER);
    await server.ctx.passwordReset.settled();
    expect(smtp.to('mo@example.com')).toHaveLength(3);
    const [mo] = await server.sql('users').where({ username: 'mo' }).select('id');
    expect((await events('password_reset.requested', mo.id)).map((d) => d.outcome).sort()).toEqual(['sent', 'sent', 'sent', 'throttled']);
  });

  test('throttled per address: past the limit, the same answer and no mail', async () => {
    await server.user('ned', 'ned-password-1', { email: 'ned@example.com' });
    const b = browser();
    for (let i = 0; i < 10; i++) await b.requestReset(`someone-${i}`);
    const over = await b.requestReset('ned');
    expect(over.status).toBe(200);
    expect(over.html).toContain(SAME_ANSWER);
    await server.ctx.passwordReset.settled();
    expect(smtp.to('ned@example.com')).toHaveLength(0);
    await browser().requestReset('ned'); // another address
    await smtp.nth('ned@example.com', 1);
  });

  test('the forms are CSRF-protected', async () => {
    const b = browser();
    const refused = await b.post('/password/forgot', { identifier: 'erin' });
    expect(refused.status).toBe(403);
    expect(refused.html).toContain('The form expired');
    await server.user('oz', 'oz-password-1', { email: 'oz@example.com' });
    await b.requestReset('oz');
    const { token } = linkIn(await smtp.nth('oz@example.com', 1));
    const forged = await b.post('/password/reset', { token, password: 'oz-new-password', confirm: 'oz-new-password' });
    expect(forged.status).toBe(403);
    expect((await passwordGrant('oz', 'oz-password-1')).status).toBe(200);
  });

  test('a user with a second factor passes it before the new password is set', async () => {
    await server.user('pia', 'pia-password-1', { email: 'pia@example.com' });
    const account = new AccountBrowser(server);
    await account.signInAtAccount('pia', 'pia-password-1');
    const { recoveryCodes } = await account.enrolTotp();
    expect(recoveryCodes.length).toBeGreaterThan(0);

    const b = browser();
    await b.requestReset('pia');
    const { token } = linkIn(await smtp.nth('pia@example.com', 1));
    const form = await b.open(`/password/reset?token=${token}`);
    expect(form.html).toContain('name="code"');
    const noCode = await b.post('/password/reset', {
      ...hiddenFields(form.html),
      password: 'pia-new-password',
      confirm: 'pia-new-password',
    });
    expect(noCode.status).toBe(401);
    const wrong = await b.reset(token, { code: '000000', password: 'pia-new-password', confirm: 'pia-new-password' });
    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain('That code is not right');
    expect((await passwordGrant('pia', 'pia-new-password')).status).toBe(400);

    const done = await b.reset(token, { code: recoveryCodes[0]!, password: 'pia-new-password', confirm: 'pia-new-password' });
    expect(done.status).toBe(200);
    // The new password is right: the sign-in goes on to the second factor.
    const next = await new AccountBrowser(server).signInAtAccount('pia', 'pia-new-password');
    expect(next.status).toBe(200);
    expect(next.html).not.toContain('Invalid username or password');
    expect(next.html).toContain('id="code" name="code"');
    expect(recoveryCodesOf(next.html)).toEqual([]);
  });

  test('a directory user: the directory writes it; its refusal is shown in words; an outage is a 503 and keeps the link', async () => {
    // Known to Latchkey once signed in.
    const first = await passwordGrant('frank', 'frank-directory-1');
    expect(first.status).toBe(200);
    const b = browser();
    await b.requestReset('frank');
    const { token } = linkIn(await smtp.nth('frank@corp.example', 1));

    const refused = await b.reset(token, { password: 'short-pw', confirm: 'short-pw' });
    expect(refused.status).toBe(400);
    expect(refused.html).toContain('The new password is too short.');
    expect(directory.read().users.frank!.password).toBe('frank-directory-1');

    directory.setDown(true);
    const down = await b.reset(token, { password: 'frank-directory-2', confirm: 'frank-directory-2' });
    expect(down.status).toBe(503);
    expect(down.html).toContain('Your link still works');
    expect(directory.read().users.frank!.password).toBe('frank-directory-1');
    directory.setDown(false);

    // Once the directory answers again (the chain probes it), the same link works.
    let done = down;
    await eventually('the directory back', async () => {
      done = await b.reset(token, { password: 'frank-directory-2', confirm: 'frank-directory-2' });
      return done.status !== 503;
    });
    expect(done.status).toBe(200);
    expect(directory.read().users.frank!.password).toBe('frank-directory-2');
    expect(await refresh(first.body.refresh_token!)).toBe(400);
    expect((await passwordGrant('frank', 'frank-directory-2')).status).toBe(200);
    expect((await passwordGrant('frank', 'frank-directory-1')).status).toBe(400);
  });

  test('a directory user whose backend does not allow resets gets no mail, and the same answer', async () => {
    expect((await passwordGrant('gina', 'gina-password-1')).status).toBe(200);
    const asked = await browser().requestReset('gina');
    expect(asked.html).toContain(SAME_ANSWER);
    await server.ctx.passwordReset.settled();
    expect(smtp.to('gina@partner.example')).toHaveLength(0);
    const [gina] = await server.sql('users').where({ username: 'gina' }).select('id');
    expect(await events('password_reset.requested', undefined)).toEqual(
      expect.arrayContaining([expect.objectContaining({ outcome: 'not_resettable' })]),
    );
    expect(gina).toBeDefined();
  });

  test('admin setUserPassword: a directory user of a backend with resets, a clear error for one without', async () => {
    const admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const setPassword = `mutation($id: ID!, $password: String!) { setUserPassword(id: $id, password: $password) }`;
    const [frank] = await server.sql('users').where({ username: 'frank' }).select('id');
    const [gina] = await server.sql('users').where({ username: 'gina' }).select('id');
    const tokens = await passwordGrant('frank', 'frank-directory-2');

    const tooShort = await graphqlPost(server, admin, setPassword, { id: frank.id, password: 'short' });
    expect(tooShort.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(tooShort.errors?.[0]?.message).toContain('The new password is too short.');

    const set = await graphqlPost(server, admin, setPassword, { id: frank.id, password: 'frank-directory-3' });
    expect(set.errors).toBeUndefined();
    expect(set.data?.setUserPassword).toBe(true);
    expect(directory.read().users.frank!.password).toBe('frank-directory-3');
    expect(await refresh(tokens.body.refresh_token!)).toBe(400);

    const readOnly = await graphqlPost(server, admin, setPassword, { id: gina.id, password: 'gina-password-2' });
    expect(readOnly.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(readOnly.errors?.[0]?.message).toContain('backend "partners" does not allow password resets');
  });
});

describe('password reset by mail, turned off or misconfigured', () => {
  test('off by default: no link on the login page, no reset pages', async () => {
    const server = await startTestServer('sqlite');
    try {
      const page = await new AccountBrowser(server).open('/account');
      expect(page.html).not.toContain('Forgot your password?');
      expect((await get(`${server.url}/password/forgot`)).status).toBe(404);
      expect((await get(`${server.url}/password/reset`, { token: 'x' })).status).toBe(404);
    } finally {
      await server.stop();
    }
  });

  test('on without a mail server: a start error naming the key', async () => {
    await expect(startTestServer('sqlite', { passwordReset: { enabled: true } })).rejects.toThrow(
      /smtp\.url: is required when passwordReset\.enabled is true/,
    );
  });
});
