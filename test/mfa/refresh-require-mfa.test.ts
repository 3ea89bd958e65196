import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AccountBrowser, firstForm, redeem } from '../helpers/account.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { advanceClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import type { CodeFlowClient } from '../helpers/flow.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { codeAt } from '../helpers/totp.ts';

/**
 * docs/decisions.md, "Refresh and the account's state": a client that now has `requireMfa` refuses a refresh of
 * a token whose sign-in had no second factor (issue 20, item 11); one that had it goes on.
 */
describe.each(databaseKinds)('the refresh grant after requireMfa is set on %s', (kind) => {
  let server: TestServer;
  let app: CodeFlowClient;

  beforeAll(async () => {
    server = await startTestServer(kind);
    app = await server.client({ grantTypes: ['authorization_code', 'refresh_token'], scopes: ['openid'] });
  });
  afterAll(() => server.stop());

  const refresh = async (token: string) => {
    const res = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'refresh_token', refresh_token: token },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  test('a password-only refresh token gets invalid_grant and nothing; a token with a second factor is refreshed', async () => {
    await server.user('vera', 'vera-password-1');
    const enrolled = new AccountBrowser(server);
    await enrolled.signInAtAccount('vera', 'vera-password-1');
    const { secret } = await enrolled.enrolTotp();
    // The session that enrolled signed in with the password alone; a new browser uses the second step.
    const passwordOnly = String((await redeem(server, app, await enrolled.code(app))).body.refresh_token);
    const twoFactors = new AccountBrowser(server);
    const step = await twoFactors.signInAtAccount('vera', 'vera-password-1');
    advanceClock(30_000);
    expect((await twoFactors.send('/account', { ...firstForm(step.html), code: codeAt(secret, serverNow()) })).status).toBe(303);
    const withMfa = String((await redeem(server, app, await twoFactors.code(app))).body.refresh_token);

    const admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const set = await graphqlPost(
      server,
      admin,
      `mutation($id: ID!) { updateClient(clientId: $id, input: { requireMfa: true }) { requireMfa } }`,
      { id: app.clientId },
    );
    expect(set.data).toEqual({ updateClient: { requireMfa: true } });

    const refused = await refresh(passwordOnly);
    expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(refused.body.access_token).toBeUndefined();
    expect((await refresh(withMfa)).status).toBe(200);
  });
});
