import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { locationQuery } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { advanceClock } from '../helpers/clock.ts';

/** OIDC `max_age`: an SSO session older than it asks for the password again; auth_time tells when. */
describe('max_age', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('mia', 'mia-password-1');
  });
  afterAll(() => server?.stop());

  test('a recent enough session passes; an older one gets the login page; auth_time is the real sign-in time', async () => {
    const client = await server.client({ scopes: ['openid'] });
    const browser = new Browser(server);
    // The sign-in happens somewhere between these two instants: a slow machine may take seconds.
    const before = Math.floor(Date.now() / 1000);
    const first = await obtainCode(browser, client, 'mia', 'mia-password-1', { scope: 'openid' });
    const after = Math.ceil(Date.now() / 1000);
    const firstId = decodeJwt(((await (await exchangeCode(server, client, first.code!)).json()) as { id_token: string }).id_token);
    expect(Number(firstId.auth_time)).toBeGreaterThanOrEqual(before);
    expect(Number(firstId.auth_time)).toBeLessThanOrEqual(after);

    advanceClock(2100);
    const query = { client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', scope: 'openid', state: 's' };
    // Within max_age: straight back to the client, and the id_token keeps the original auth_time.
    const recent = await browser.authorize({ ...query, max_age: '3600' });
    expect(recent.status).toBe(302);
    const again = decodeJwt(
      ((await (await exchangeCode(server, client, locationQuery(recent).code!)).json()) as { id_token: string }).id_token,
    );
    expect(again.auth_time).toBe(firstId.auth_time);

    // Older than max_age: the sign-in page, and after it a new auth_time.
    const stale = await browser.authorize({ ...query, max_age: '1' });
    expect(stale.status).toBe(200);
    expect(await stale.text()).toContain('name="password"');
    const none = await browser.authorize({ ...query, max_age: '1', prompt: 'none' });
    expect(locationQuery(none)).toMatchObject({ error: 'login_required', state: 's' });
    const relogged = await obtainCode(browser, client, 'mia', 'mia-password-1', { scope: 'openid', max_age: '1' });
    const fresh = decodeJwt(((await (await exchangeCode(server, client, relogged.code!)).json()) as { id_token: string }).id_token);
    expect(Number(fresh.auth_time)).toBeGreaterThan(Number(firstId.auth_time));
  });
});
