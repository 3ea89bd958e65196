import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { advanceClock, resetClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import { basic, postForm } from '../helpers/http.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { answer, codeRequest, expectRefused, passwordGrant } from '../helpers/throttle.ts';
import { codeAt } from '../helpers/totp.ts';

/**
 * Second-factor guessing (docs/decisions.md): wrong TOTP or recovery codes count per account over 24 hours, a
 * right password does not reset them, and past ten the code step takes only a recovery code (or a
 * passkey), telling the operator. And a right password never re-arms the account's delay against
 * the code step that follows it.
 */

const PASSWORD = 'right-password-1';

/** A six-digit code that is none of the ones the server accepts now (one step either side). */
function wrongCode(secret: string): string {
  const accepted = [-30_000, 0, 30_000].map((d) => codeAt(secret, serverNow() + d));
  for (let n = 100_000; ; n += 7919) if (!accepted.includes(String(n))) return String(n);
}

describe.each(databaseKinds)('second-factor guessing on %s', (kind) => {
  let server: TestServer;
  let app: { clientId: string; clientSecret: string | null; redirectUri: string };

  /** A database user with TOTP on; its secret and recovery codes. */
  async function enrolled(username: string): Promise<{ secret: string; recoveryCodes: string[] }> {
    const id = await server.user(username, PASSWORD);
    const user = (await server.ctx.users.find(id))!;
    const { secret } = (await server.ctx.mfa.startTotp(user))!;
    const recoveryCodes = (await server.ctx.mfa.confirmTotp(user, codeAt(secret, serverNow())))!;
    advanceClock(30_000); // the enrolment used this step
    return { secret, recoveryCodes };
  }

  const grant = (username: string, otp: string) =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password: PASSWORD, otp },
      { authorization: basic(app.clientId, app.clientSecret!) },
    ).then(answer);

  beforeAll(async () => {
    // Free failures well above ten: what stops the codes here is the code count, not the password ladder.
    server = await startTestServer(kind, { throttle: { userFreeFailures: 50 } });
    app = await server.client({ grantTypes: ['authorization_code', 'password'] });
  });
  afterAll(async () => {
    resetClock();
    await server.stop();
  });

  test('ten wrong codes in a day, a right sign-in between them: TOTP is refused, a recovery code works, the operator is told', async () => {
    const { secret, recoveryCodes } = await enrolled('tess');
    for (let i = 0; i < 5; i++) expectRefused(await grant('tess', wrongCode(secret)));
    // The owner signs in between: the count of wrong codes is not reset.
    expect((await grant('tess', codeAt(secret, serverNow()))).status).toBe(200);
    advanceClock(30_000);
    for (let i = 0; i < 5; i++) expectRefused(await grant('tess', wrongCode(secret)));

    const refused = await grant('tess', codeAt(secret, serverNow()));
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: 'invalid_grant',
      error_description: 'too many wrong one-time codes lately: send a recovery code in otp',
    });
    expect((await grant('tess', recoveryCodes[0]!)).status).toBe(200);

    const events = await server.sql('audit_events').where({ kind: 'mfa.guessing' }).select('user_id');
    expect(events).toHaveLength(1);
    expect(sample(await scrape(server.url), 'latchkey_mfa_guessing_total')).toBe(1);

    // A day later TOTP codes are taken again.
    advanceClock(24 * 3600 * 1000 + 60_000);
    expect((await grant('tess', codeAt(secret, serverNow()))).status).toBe(200);
  });

  test('the code step after a right password is not refused by the delay of earlier failures', async () => {
    // The default policy: five free failures, then a delay.
    const strict = await startTestServer(kind);
    try {
      const id = await strict.user('remy', PASSWORD);
      const user = (await strict.ctx.users.find(id))!;
      const { secret: own } = (await strict.ctx.mfa.startTotp(user))!;
      await strict.ctx.mfa.confirmTotp(user, codeAt(own, serverNow()));
      advanceClock(30_000);
      const client = await strict.client({ grantTypes: ['authorization_code', 'password'] });
      // Five wrong passwords: the account is at its first delay (one second).
      for (let i = 0; i < 5; i++) expectRefused(await answer(await passwordGrant(strict.url, client, 'remy', `wrong-${i}`)));
      advanceClock(1_500);

      const browser = new Browser(strict);
      const second = await browser.signIn(codeRequest(client), 'remy', PASSWORD);
      expect(second.status).toBe(200);
      const done = await browser.submit(second, { code: codeAt(own, serverNow()) });
      expect(done.status).toBe(303);
      expect(done.headers.get('location')).toContain('code=');
    } finally {
      await strict.stop();
    }
  });
});
