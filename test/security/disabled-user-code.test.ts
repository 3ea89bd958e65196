import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** docs/decisions.md: a user disabled after a code was issued gets nothing for it at the code exchange. */
describe.each(databaseKinds)('a code whose user was disabled since on %s', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server.stop());

  test('the exchange answers invalid_grant and issues no token or id_token', async () => {
    const userId = await server.user('dana', 'dana-password-1');
    const app = await server.client({ scopes: ['openid', 'profile'] });
    const { code } = await obtainCode(new Browser(server), app, 'dana', 'dana-password-1', { scope: 'openid profile' });

    await server.ctx.users.update(userId, { disabled: true }, CLI_ACTOR);
    const res = await exchangeCode(server, app, code!);
    expect(res.status).toBe(400);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ error: 'invalid_grant' });
    expect(body.access_token).toBeUndefined();
    expect(body.id_token).toBeUndefined();
    expect(Number((await server.sql('access_tokens').where({ user_id: userId }).count({ n: '*' }).first())?.n)).toBe(0);

    // Enabled again, a fresh sign-in works: it was the state of the account, not the client.
    await server.ctx.users.update(userId, { disabled: false }, CLI_ACTOR);
    const again = await obtainCode(new Browser(server), app, 'dana', 'dana-password-1', { scope: 'openid profile' });
    expect((await exchangeCode(server, app, again.code!)).status).toBe(200);
  });

  // The user is read with the refresh token, in the same query (issue 26): a disabled one still gets nothing.
  test('a refresh token of a user disabled since gets no new tokens', async () => {
    const userId = await server.user('erin', 'erin-password-1');
    const app = await server.client({ grantTypes: ['authorization_code', 'refresh_token'], scopes: ['openid', 'offline_access'] });
    const { code } = await obtainCode(new Browser(server), app, 'erin', 'erin-password-1', { scope: 'openid offline_access' });
    const { refresh_token } = (await (await exchangeCode(server, app, code!)).json()) as { refresh_token: string };

    await server.ctx.users.update(userId, { disabled: true }, CLI_ACTOR);
    const res = await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'refresh_token',
      refresh_token,
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.access_token).toBeUndefined();
    expect(['invalid_grant', 'invalid_refresh_token']).toContain(body.error);
  });
});
