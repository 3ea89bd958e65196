import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { decodeJwt } from 'jose';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { advanceClock, freezeClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode } from '../helpers/flow.ts';
import { basic, CookieJar, get, hiddenFields, locationQuery, postForm } from '../helpers/http.ts';
import { codeAt } from '../helpers/totp.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/** A code of `secret` at `at` (the server's time, ms), as an authenticator app computes it. */
const textOf = (html: string, id: string) => new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(html)?.[1];
const recoveryCodesOf = (html: string) =>
  [...(/<div id="recovery-codes">([\s\S]*?)<\/div>/.exec(html)?.[1] ?? '').matchAll(/<code>([^<]+)<\/code>/g)].map((m) => m[1]!);

/**
 * A person at the account page with a cookie jar: signs in (unless `signedIn`, a browser signed in
 * already), enrols TOTP, and returns the secret and recovery codes.
 */
async function enrolAtAccountPage(
  server: TestServer,
  username: string,
  password: string,
  signedIn?: CookieJar,
): Promise<{ jar: CookieJar; secret: string; recoveryCodes: string[] }> {
  const jar = signedIn ?? new CookieJar();
  const step = async (res: Response) => {
    jar.store(res);
    return res;
  };
  if (!signedIn) {
    const loginPage = await step(await get(`${server.url}/account`, {}, { cookie: jar.header() }));
    expect(loginPage.status).toBe(200);
    const session = await step(
      await postForm(`${server.url}/account`, { ...hiddenFields(await loginPage.text()), username, password }, { cookie: jar.header() }),
    );
    expect(session.status).toBe(303);
  }
  const enrolPage = await step(await get(`${server.url}/account/mfa/totp`, {}, { cookie: jar.header() }));
  const html = await enrolPage.text();
  const secret = textOf(html, 'totp-secret')!;
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  expect(html).toContain('<svg');
  const confirmed = await step(
    await postForm(
      `${server.url}/account/mfa/totp`,
      { ...hiddenFields(html), code: codeAt(secret, serverNow()) },
      { cookie: jar.header() },
    ),
  );
  expect(confirmed.status).toBe(200);
  const recoveryCodes = recoveryCodesOf(await confirmed.text());
  expect(recoveryCodes).toHaveLength(10);
  return { jar, secret, recoveryCodes };
}

describe.each(databaseKinds)('TOTP and recovery codes on %s', (kind) => {
  let server: TestServer;
  let app: { clientId: string; clientSecret: string | null; redirectUri: string };
  let strict: { clientId: string; clientSecret: string | null; redirectUri: string };
  let alice: { secret: string; recoveryCodes: string[]; jar: CookieJar };

  const grant = (username: string, password: string, otp?: string) =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password, scope: 'openid', otp },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );

  beforeAll(async () => {
    server = await startTestServer(kind);
    app = await server.client({ grantTypes: ['authorization_code', 'password', 'refresh_token'], scopes: ['openid', 'profile'] });
    strict = await server.client({
      grantTypes: ['authorization_code'],
      scopes: ['openid'],
      requireMfa: true,
      redirectUris: ['http://localhost:3000/strict'],
    });
    await server.user('alice', 'alice-password-1');
    await server.user('bob', 'bob-password-1');
    await server.user('carol', 'carol-password-1');
    alice = await enrolAtAccountPage(server, 'alice', 'alice-password-1');
  });
  afterAll(() => server.stop());

  test('the password grant wants the second factor in otp: mfa_required without, invalid_grant when wrong', async () => {
    const without = await grant('alice', 'alice-password-1');
    expect(without.status).toBe(400);
    expect(((await without.json()) as { error: string }).error).toBe('mfa_required');
    advanceClock(30_000); // a step the enrolment did not use
    const wrong = await grant('alice', 'alice-password-1', '000000' === codeAt(alice.secret, serverNow()) ? '111111' : '000000');
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: string }).error).toBe('invalid_grant');
    const right = await grant('alice', 'alice-password-1', codeAt(alice.secret, serverNow()));
    expect(right.status).toBe(200);
    const { id_token } = (await right.json()) as { id_token: string };
    expect(decodeJwt(id_token).amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  test('each code is taken once; one step of drift is accepted, two are not', async () => {
    advanceClock(90_000);
    const now = serverNow();
    const code = codeAt(alice.secret, now);
    expect((await grant('alice', 'alice-password-1', code)).status).toBe(200);
    expect((await grant('alice', 'alice-password-1', code)).status).toBe(400); // replayed
    advanceClock(90_000);
    expect((await grant('alice', 'alice-password-1', codeAt(alice.secret, serverNow() - 60_000))).status).toBe(400); // two steps old
    expect((await grant('alice', 'alice-password-1', codeAt(alice.secret, serverNow() + 30_000))).status).toBe(200); // a phone one step ahead
  });

  test('a recovery code works once', async () => {
    const [first, second] = alice.recoveryCodes;
    expect((await grant('alice', 'alice-password-1', first)).status).toBe(200);
    expect((await grant('alice', 'alice-password-1', first)).status).toBe(400);
    expect((await grant('alice', 'alice-password-1', second!.toUpperCase())).status).toBe(200);
  });

  test('the login page asks for the code after the password; the id_token says how', async () => {
    const browser = new Browser(server);
    advanceClock(60_000);
    const afterPassword = await browser.signIn(
      { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', scope: 'openid', state: 's' },
      'alice',
      'alice-password-1',
    );
    expect(afterPassword.status).toBe(200);
    const html = await afterPassword.text();
    expect(html).toContain('name="code"');
    expect(browser.jar.has('lk_sso')).toBe(false); // no session before the second factor
    const wrong = await browser.submit(new Response(html), { code: '12345' });
    expect(wrong.status).toBe(401);
    const done = await browser.submit(wrong, { code: codeAt(alice.secret, serverNow()) });
    expect(done.status).toBe(303);
    const tokens = (await (await exchangeCode(server, app, locationQuery(done).code!)).json()) as { id_token: string };
    expect(decodeJwt(tokens.id_token).amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  test('wrong codes count as failed sign-ins of the brute-force policy', async () => {
    const answers: number[] = [];
    freezeClock(); // the first delay is one second: no slow machine may outrun it
    for (let i = 0; i < 7; i++) answers.push((await grant('alice', 'alice-password-1', `${100000 + i}`)).status);
    expect(answers.slice(0, 5)).toEqual([400, 400, 400, 400, 400]);
    expect(answers.slice(5)).toEqual([429, 429]);
    advanceClock(16 * 60_000); // past the delay and the window
  });

  test('a client that needs MFA takes a user without a factor through enrolment, then on with the request', async () => {
    const browser = new Browser(server);
    const enrol = await browser.signIn(
      { client_id: strict.clientId, redirect_uri: strict.redirectUri, response_type: 'code', scope: 'openid', state: 's' },
      'bob',
      'bob-password-1',
    );
    expect(enrol.status).toBe(200);
    const html = await enrol.text();
    const secret = textOf(html, 'totp-secret')!;
    const codes = await browser.submit(new Response(html), { code: codeAt(secret, serverNow()) });
    expect(codes.status).toBe(200);
    const page = await codes.text();
    expect(recoveryCodesOf(page)).toHaveLength(10);
    const done = await browser.submit(new Response(page), {});
    expect(done.status).toBe(303);
    const tokens = (await (await exchangeCode(server, strict, locationQuery(done).code!)).json()) as { id_token: string };
    expect(decodeJwt(tokens.id_token).amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  test("under prompt=login and max_age=0 the recovery codes' Continue goes on with the sign-in it follows", async () => {
    await server.user('dora', 'dora-password-1');
    const browser = new Browser(server);
    const query = {
      client_id: strict.clientId,
      redirect_uri: strict.redirectUri,
      response_type: 'code',
      scope: 'openid',
      state: 's',
      prompt: 'login',
      max_age: '0',
    };
    const enrol = await browser.signIn(query, 'dora', 'dora-password-1');
    expect(enrol.status).toBe(200);
    const html = await enrol.text();
    const codes = await browser.submit(new Response(html), { code: codeAt(textOf(html, 'totp-secret')!, serverNow()) });
    const page = await codes.text();
    expect(recoveryCodesOf(page)).toHaveLength(10);
    const done = await browser.submit(new Response(page), {});
    expect(done.status).toBe(303);
    expect(locationQuery(done).code).toBeDefined();
    // The request is finished: the next one with prompt=login asks for the password again.
    const again = await browser.authorize(query);
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('name="password"');
  });

  test('a password-only session asks only for the second factor at a client that needs one', async () => {
    const browser = new Browser(server);
    // carol signs in at an ordinary client (no factor yet), then enrols at the account page in that
    // browser: the enrolment ends her other sessions (docs/decisions.md), not the one that made it.
    const first = await browser.signIn(
      { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', scope: 'openid', state: 's' },
      'carol',
      'carol-password-1',
    );
    expect(first.status).toBe(303);
    const { secret } = await enrolAtAccountPage(server, 'carol', 'carol-password-1', browser.jar);
    advanceClock(30_000);
    const stepUp = await browser.authorize({
      client_id: strict.clientId,
      redirect_uri: strict.redirectUri,
      response_type: 'code',
      scope: 'openid',
      state: 's',
    });
    expect(stepUp.status).toBe(200);
    const html = await stepUp.text();
    expect(html).toContain('name="code"');
    expect(html).not.toContain('name="password"');
    const done = await browser.submit(new Response(html), { code: codeAt(secret, serverNow()) });
    expect(done.status).toBe(303);
    const tokens = (await (await exchangeCode(server, strict, locationQuery(done).code!)).json()) as { id_token: string };
    expect(decodeJwt(tokens.id_token).amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  test('the admin API shows the factors and resets them, audited', async () => {
    const token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const aliceId = (await server.sql('users').where({ username: 'alice' }).first('id')).id as string;
    const read = await graphqlPost(server, token, `query($id: ID!) { user(id: $id) { mfa { totp passkeys recoveryCodesLeft } } }`, {
      id: aliceId,
    });
    expect(read.data).toEqual({ user: { mfa: { totp: true, passkeys: 0, recoveryCodesLeft: 8 } } });
    const reset = await graphqlPost(server, token, `mutation($id: ID!) { resetUserMfa(id: $id) { mfa { totp recoveryCodesLeft } } }`, {
      id: aliceId,
    });
    expect(reset.data).toEqual({ resetUserMfa: { mfa: { totp: false, recoveryCodesLeft: 0 } } });
    expect((await grant('alice', 'alice-password-1')).status).toBe(200);
    const events = await server.sql('audit_events').where({ kind: 'admin.change', user_id: aliceId }).select('details');
    expect(events.map((e) => JSON.parse(String(e.details)).action)).toContain('user.reset_mfa');
    // A client's requireMfa through the admin API, as through the services.
    const registered = await graphqlPost(
      server,
      token,
      `mutation { registerClient(input: { name: "Payroll", redirectUris: ["https://payroll.example/cb"], requireMfa: true }) { client { clientId requireMfa } } }`,
    );
    expect((registered.data as { registerClient: { client: { requireMfa: boolean } } }).registerClient.client.requireMfa).toBe(true);
    const id = (registered.data as { registerClient: { client: { clientId: string } } }).registerClient.client.clientId;
    const updated = await graphqlPost(
      server,
      token,
      `mutation($id: ID!) { updateClient(clientId: $id, input: { requireMfa: false }) { requireMfa } }`,
      { id },
    );
    expect(updated.data).toEqual({ updateClient: { requireMfa: false } });
  });

  test('nothing secret at rest: no TOTP secret or recovery code in the database', async () => {
    const { secret, recoveryCodes } = await enrolAtAccountPage(server, 'alice', 'alice-password-1');
    if (kind === 'sqlite') {
      const file =
        readFileSync(server.db.url.slice('sqlite:'.length)).toString('latin1') +
        readFileSync(`${server.db.url.slice('sqlite:'.length)}-wal`).toString('latin1');
      expect(file).not.toContain(secret);
      for (const c of recoveryCodes) expect(file).not.toContain(c.replace('-', ''));
    }
    const rows = JSON.stringify([await server.sql('user_totp').select(), await server.sql('recovery_codes').select()]);
    expect(rows).not.toContain(secret);
    for (const c of recoveryCodes) expect(rows).not.toContain(c);
  });
});
