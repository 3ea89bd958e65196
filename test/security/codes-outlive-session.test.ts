import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AccountBrowser, firstForm, redeem } from '../helpers/account.ts';
import { databaseKinds } from '../helpers/databases.ts';
import type { CodeFlowClient } from '../helpers/flow.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * docs/decisions.md: "a code whose session has ended is `invalid_grant`". A code issued just before the user
 * signs out, and redeemed afterwards, gets no tokens (issue 20, finding 5).
 */
describe.each(databaseKinds)('a code outlives no session on %s', (kind) => {
  let server: TestServer;
  let app: CodeFlowClient;

  beforeAll(async () => {
    server = await startTestServer(kind);
    app = await server.client({ grantTypes: ['authorization_code', 'refresh_token'], scopes: ['openid'] });
  });
  afterAll(() => server.stop());

  async function signedIn(username: string): Promise<AccountBrowser> {
    const b = new AccountBrowser(server);
    expect((await b.signInAtAccount(username, `${username}-password-1`)).html).toContain('Signed in as');
    return b;
  }

  async function expectRefused(code: string) {
    const answer = await redeem(server, app, code);
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(answer.body.access_token).toBeUndefined();
    expect(answer.body.id_token).toBeUndefined();
  }

  test("signed out at /connect/v10/logout: the code from just before is refused; another browser's is not", async () => {
    await server.user('lena', 'lena-password-1');
    const [b, other] = [await signedIn('lena'), await signedIn('lena')];
    const [code, othersCode] = [await b.code(app), await other.code(app)];
    const confirm = await b.open('/connect/v10/logout');
    expect((await b.send('/connect/v10/logout', firstForm(confirm.html))).html).toContain('signed out');
    await expectRefused(code);
    // A logout ends its own session: the user's other browser signed out of nothing.
    expect((await redeem(server, app, othersCode)).status).toBe(200);
  });

  test('signed out everywhere: every code from just before is refused', async () => {
    await server.user('milo', 'milo-password-1');
    const [b, other] = [await signedIn('milo'), await signedIn('milo')];
    const codes = [await b.code(app), await other.code(app)];
    expect((await b.post('sign_out_everywhere', {})).html).toContain('signed out');
    for (const code of codes) await expectRefused(code);
  });

  test('a code whose session row is gone (expired, then purged) is refused and used up', async () => {
    await server.user('nina', 'nina-password-1');
    const b = await signedIn('nina');
    const code = await b.code(app);
    // Gone without a logout (the retention purge): the exchange asks for the session, not for a mark on the code.
    await server
      .sql('sso_sessions')
      .where({ user_id: (await server.sql('users').where({ username: 'nina' }).first()).id })
      .delete();
    await expectRefused(code);
    expect((await redeem(server, app, code)).body.access_token).toBeUndefined();
  });
});
