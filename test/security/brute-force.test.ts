import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import { locationQuery } from '../helpers/http.ts';
import { spawnLatchkey, type LatchkeyProcess } from '../helpers/latchkey-process.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import {
  answer,
  browserWith,
  codeRequest,
  expectRefused,
  expectThrottled,
  expectThrottledPage,
  passwordGrant,
  setCookieLine,
  tally,
  type PasswordClient,
} from '../helpers/throttle.ts';
import { advanceClock, freezeClock, resetClock } from '../helpers/clock.ts';

/**
 * Brute-force throttling (docs/decisions.md, "Brute-force throttling" and "Brute force: how it is counted"):
 * attempts are counted before the password is checked and atomically across processes; the user is
 * the account, not the typed string; failures older than the window stop counting; a browser holding
 * a device cookie of the user is not locked out by an attacker; keys are not usernames in plain text;
 * an address is still blocked after too many failures. Each test starts its own server so that one
 * test's failures never count in another's.
 */

const PASSWORD = 'right-password-1';

function servers(kind: DatabaseKind) {
  const started: TestServer[] = [];
  const serve = async (overrides: Record<string, unknown> = {}) => {
    const s = await startTestServer(kind, overrides);
    started.push(s);
    const client = await s.client({ grantTypes: ['authorization_code', 'password'] });
    return { server: s, client };
  };
  return { serve, stopAll: () => Promise.all(started.map((s) => s.stop())) };
}

describe.each(databaseKinds)('brute-force throttling on %s', (kind) => {
  const { serve, stopAll } = servers(kind);
  afterAll(() => stopAll());

  test('a burst of 40 concurrent guesses for one user: exactly 5 passwords are checked, the rest wait (429)', async () => {
    const { server, client } = await serve();
    await server.user('bob', PASSWORD);

    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => passwordGrant(server.url, client, 'bob', `wrong-${i}`).then(answer)),
    );

    expect(tally(answers)).toEqual({ 400: 5, 429: 35 });
    for (const a of answers) {
      if (a.status === 400) expectRefused(a);
      else expectThrottled(a);
    }
    // Only the checked guesses are failures in the audit trail.
    const failures = await server.sql('audit_events').where({ kind: 'login.failure' }).count({ n: '*' });
    expect(Number(failures[0]!.n)).toBe(5);
  });

  test('the user is the account, not the typed string: five spellings share one count', async () => {
    const { server, client } = await serve();
    await server.user('alice', PASSWORD);

    for (const spelling of ['alice', ' alice', '    alice', 'ALICE', 'alice '])
      expectRefused(await answer(await passwordGrant(server.url, client, spelling, 'wrong-password')));

    // The right password, with yet other spellings, is refused like a wrong one while the user waits.
    for (const spelling of ['  Alice  ', 'alice', 'Alice'])
      expectThrottled(await answer(await passwordGrant(server.url, client, spelling, PASSWORD)));
    // The login page counts the same user.
    await expectThrottledPage(await new Browser(server).signIn(codeRequest(client), 'aLiCe', PASSWORD));
  });

  test('failures older than throttle.userWindow stop counting', async () => {
    const { server, client } = await serve({ throttle: { userWindow: 2 } });
    await server.user('frank', PASSWORD);
    for (let i = 0; i < 5; i++) expectRefused(await answer(await passwordGrant(server.url, client, 'frank', `wrong-${i}`)));
    expectThrottled(await answer(await passwordGrant(server.url, client, 'frank', 'wrong-5')));

    advanceClock(2500);
    // The five failures are out of the window: four new ones are checked, none of them delayed …
    for (let i = 0; i < 4; i++) expectRefused(await answer(await passwordGrant(server.url, client, 'frank', `again-${i}`)));
    // … and the right password signs in.
    const ok = await answer(await passwordGrant(server.url, client, 'frank', PASSWORD));
    expect(ok.status).toBe(200);
    expect(ok.body.access_token).toBeDefined();
    // Within the window the policy holds as before: five failures, then a delay.
    for (let i = 0; i < 5; i++) expectRefused(await answer(await passwordGrant(server.url, client, 'frank', `later-${i}`)));
    expectThrottled(await answer(await passwordGrant(server.url, client, 'frank', PASSWORD)));
    resetClock();
  });

  test("a browser holding the user's device cookie signs in while an attacker holds the user at the maximum delay", async () => {
    // Base delay = maximum delay: from the first delayed attempt on, the user is at the maximum.
    const { server, client } = await serve({ throttle: { userBaseDelay: 60, userMaxDelay: 60 } });
    await server.user('dana', PASSWORD);

    // The real user signs in once in their own browser, which gets a device cookie.
    const owner = new Browser(server);
    const first = await owner.signIn(codeRequest(client), 'dana', PASSWORD);
    expect(first.status).toBe(303);
    const device = setCookieLine(first, 'lk_device');
    expect(device).toBeDefined();
    expect(device).toMatch(/;\s*HttpOnly/i);

    // An attacker without cookies: five wrong passwords, then hammering at the delay (one second; the
    // server's clock stands still meanwhile so that no slow machine outruns it).
    freezeClock();
    for (let i = 0; i < 5; i++) expectRefused(await answer(await passwordGrant(server.url, client, 'dana', `guess-${i}`)));
    for (let i = 0; i < 10; i++) expectThrottled(await answer(await passwordGrant(server.url, client, 'dana', `guess-more-${i}`)));
    const attacker = new Browser(server);
    for (let i = 0; i < 3; i++) await expectThrottledPage(await attacker.signIn(codeRequest(client), 'dana', `form-guess-${i}`));
    // Any browser without the device cookie waits, even with the right password.
    await expectThrottledPage(await new Browser(server).signIn(codeRequest(client), 'dana', PASSWORD));

    // The owner's browser, its SSO session gone but the device cookie kept: signed in, a code issued.
    const returning = browserWith(server, owner, ['lk_device']);
    expect(returning.jar.has('lk_sso')).toBe(false);
    const back = await returning.signIn(codeRequest(client, { state: 'st-back' }), 'dana', PASSWORD);
    expect(back.status).toBe(303);
    expect(locationQuery(back)).toMatchObject({ state: 'st-back', code: expect.any(String) });

    // The same browser asked to sign in again (prompt=login) is not delayed either.
    const reauth = await owner.signIn(codeRequest(client, { prompt: 'login', state: 'st-again' }), 'dana', PASSWORD);
    expect(reauth.status).toBe(303);
    expect(locationQuery(reauth)).toMatchObject({ state: 'st-again', code: expect.any(String) });
    resetClock();
  });

  test("the device cookie is no free pass: the device's own failures delay it", async () => {
    const { server, client } = await serve();
    await server.user('gina', PASSWORD);
    const owner = new Browser(server);
    const first = await owner.signIn(codeRequest(client), 'gina', PASSWORD);
    expect(first.status).toBe(303);
    expect(setCookieLine(first, 'lk_device')).toMatch(/;\s*HttpOnly/i);

    const device = browserWith(server, owner, ['lk_device']);
    for (let i = 0; i < 5; i++) {
      const wrong = await device.signIn(codeRequest(client), 'gina', `wrong-${i}`);
      expect(wrong.status).toBe(401);
      expect(await wrong.text()).toContain('Invalid username or password.');
    }
    await expectThrottledPage(await device.signIn(codeRequest(client), 'gina', PASSWORD));
  });

  test('throttle keys and the audit trail never hold the typed username in plain text', async () => {
    const { server, client } = await serve();
    // Users type their password into the username field: it must not end up stored in the clear.
    const typed = 'Correct-Horse-Battery-9';
    for (let i = 0; i < 5; i++) expectRefused(await answer(await passwordGrant(server.url, client, typed, 'some-password')));
    // An unknown name is throttled like a known one (no account enumeration): so it is keyed somewhere.
    expectThrottled(await answer(await passwordGrant(server.url, client, typed, 'some-password')));
    await expectThrottledPage(await new Browser(server).signIn(codeRequest(client), typed, 'some-password'));

    const keys = (await server.sql('login_throttle').select('key')).map((r: { key: string }) => r.key);
    expect(keys.length).toBeGreaterThan(0);
    const audit = await server.sql('audit_events').select('*');
    expect(audit.map((e: { kind: string }) => e.kind)).toEqual(expect.arrayContaining(['login.failure', 'login.throttled']));

    const lower = typed.toLowerCase();
    const forms = [
      lower,
      Buffer.from(lower).toString('hex'),
      Buffer.from(lower).toString('base64').replace(/=+$/, ''),
      Buffer.from(lower).toString('base64url'),
    ];
    for (const stored of [JSON.stringify(keys), JSON.stringify(audit)]) {
      for (const form of forms) expect(stored.toLowerCase()).not.toContain(form.toLowerCase());
    }
  });

  test('failures from one address: no more than addressMaxFailures are checked, then the address is blocked for everyone', async () => {
    const { server, client } = await serve({ throttle: { addressMaxFailures: 3 } });
    await server.user('kai', PASSWORD);
    // Twenty guesses at once, each for another user: the per-user counts never come into play.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => passwordGrant(server.url, client, `user-${i}`, 'wrong-password').then(answer)),
    );
    expect(tally(answers)).toEqual({ 400: 3, 429: 17 });
    for (const a of answers) if (a.status === 429) expectThrottled(a);
    // A user with no failures at all, with the right password, from the blocked address.
    expectThrottled(await answer(await passwordGrant(server.url, client, 'kai', PASSWORD)));
    await expectThrottledPage(await new Browser(server).signIn(codeRequest(client), 'kai', PASSWORD));
  });
});

describe('brute-force throttling across two processes on one PostgreSQL database', () => {
  // The second process loads and transpiles the whole server: allow for a loaded machine.
  jest.setTimeout(300_000);
  let server: TestServer;
  let other: LatchkeyProcess;
  let client: PasswordClient;
  beforeAll(async () => {
    server = await startTestServer('postgres');
    other = await spawnLatchkey({ DATABASE_URL: server.db.url, LATCHKEY_SECRET: server.ctx.config.secret! });
    client = await server.client({ grantTypes: ['password'] });
  });
  afterAll(async () => {
    await other?.stop();
    await server?.stop();
  });

  test('a burst split over both processes: exactly 5 passwords are checked in all', async () => {
    await server.user('heidi', PASSWORD);
    const failuresSoFar = async () => Number((await server.sql('audit_events').where({ kind: 'login.failure' }).count({ n: '*' }))[0]!.n);
    // Both processes answer for the same deployment.
    expect((await passwordGrant(other.url, client, 'nobody-here', 'x')).status).toBe(400);
    const before = await failuresSoFar();

    const urls = [server.url, other.url];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => passwordGrant(urls[i % 2]!, client, 'heidi', `wrong-${i}`).then(answer)),
    );

    expect(tally(answers)).toEqual({ 400: 5, 429: 35 });
    for (const a of answers) {
      if (a.status === 400) expectRefused(a);
      else expectThrottled(a);
    }
    expect((await failuresSoFar()) - before).toBe(5);
  });

  test('32 right passwords of one account at once, split over both processes: every one is answered 200, twice over', async () => {
    await server.user('svc-cluster', PASSWORD);
    const urls = [server.url, other.url];
    for (let round = 0; round < 2; round++) {
      const answers = await Promise.all(
        Array.from({ length: 32 }, (_, i) => passwordGrant(urls[i % 2]!, client, 'svc-cluster', PASSWORD).then(answer)),
      );
      expect(tally(answers)).toEqual({ 200: 32 });
    }
  });
});
