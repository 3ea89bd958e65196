import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AccountBrowser, firstForm } from '../helpers/account.ts';
import { advanceClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import type { CodeFlowClient } from '../helpers/flow.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { codeAt } from '../helpers/totp.ts';

const EXPIRED = 'The sign-in form expired. Please sign in again.';

/**
 * docs/decisions.md, "The pending sign-in": the state between a right password and the second step is bound to
 * the browser that typed the password, and used once (issue 20, finding 4).
 */
describe.each(databaseKinds)('the pending sign-in on %s', (kind) => {
  let server: TestServer;
  let app: CodeFlowClient;

  beforeAll(async () => {
    server = await startTestServer(kind);
    app = await server.client({ scopes: ['openid'] });
  });
  afterAll(() => server.stop());

  /** A user with the authenticator app; `code()` is the app's code for a time step not used yet. */
  async function withTotp(username: string) {
    const password = `${username}-password-1`;
    await server.user(username, password);
    const enrolling = new AccountBrowser(server);
    await enrolling.signInAtAccount(username, password);
    const { secret } = await enrolling.enrolTotp();
    const code = () => {
      advanceClock(30_000);
      return codeAt(secret, serverNow());
    };
    return { username, password, code };
  }

  /** A fresh browser with its own cookies and CSRF token, posting `fields` (another browser's pending sign-in). */
  async function fromAnotherBrowser(path: string, fields: Record<string, string>, query = '') {
    const thief = new AccountBrowser(server);
    const own = firstForm((await thief.open(path + query)).html);
    return thief.send(path, { ...fields, csrf_token: own.csrf_token });
  }

  test("at /account, the second step's form is refused in another browser, and works once in its own", async () => {
    const u = await withTotp('olga');
    const b = new AccountBrowser(server);
    const step = firstForm((await b.signInAtAccount(u.username, u.password)).html);
    expect(step.pending).toBeTruthy();

    const stolen = await fromAnotherBrowser('/account', { ...step, code: u.code() });
    expect(stolen.status).toBe(403);
    expect(stolen.html).toContain(EXPIRED);

    expect((await b.send('/account', { ...step, code: u.code() })).status).toBe(303);
    expect(await b.signedIn()).toBe(true);
    // The same form again, even from its own browser: used already.
    const again = await b.send('/account', { ...step, code: u.code() });
    expect(again.status).toBe(403);
    expect(again.html).toContain(EXPIRED);
  });

  test('a wrong code gets a new form; the one it came from is spent', async () => {
    const u = await withTotp('pavel');
    const b = new AccountBrowser(server);
    const step = firstForm((await b.signInAtAccount(u.username, u.password)).html);
    const wrong = await b.send('/account', { ...step, code: '000000' === u.code() ? '111111' : '000000' });
    expect(wrong.status).toBe(401);
    const retry = firstForm(wrong.html);
    expect(retry.pending).not.toBe(step.pending);

    expect((await b.send('/account', { ...step, code: u.code() })).html).toContain(EXPIRED);
    expect((await b.send('/account', { ...retry, code: u.code() })).status).toBe(303);
  });

  test('at the authorize endpoint, another browser presenting the form gets the login page and no code', async () => {
    const u = await withTotp('quinn');
    const query = { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', scope: 'openid', state: 's' };
    const b = new AccountBrowser(server);
    const login = await b.authorize(query);
    const step = firstForm(
      (await b.send('/oauth/v20/authorize', { ...firstForm(await login.text()), username: u.username, password: u.password })).html,
    );
    expect(step.pending).toBeTruthy();

    const stolen = await fromAnotherBrowser('/oauth/v20/authorize', { ...step, code: u.code() }, `?${new URLSearchParams(query)}`);
    expect(stolen.status).toBe(403);
    expect(stolen.html).toContain(EXPIRED);

    const done = await b.send('/oauth/v20/authorize', { ...step, code: u.code() });
    expect(done.status).toBe(303);
    expect(new URL(done.location!).searchParams.get('code')).toBeTruthy();
  });
});
