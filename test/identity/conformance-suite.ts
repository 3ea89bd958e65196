import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { get, postForm, basic } from '../helpers/http.ts';
import type { TestServer } from '../helpers/server.ts';

export interface Account {
  username: string;
  password: string;
}

/**
 * What the suite needs from a backend: a server whose chain starts with it, and its test accounts.
 * A plugin author runs the suite against their own backend with a fixture of this shape (docs/identity-backends.md,
 * "Writing a backend").
 */
export interface BackendFixture {
  server: TestServer;
  /** The backend under test, as the chain holds it. */
  backendId: string;
  active: Account;
  disabled: Account;
  /** A name full of LDAP filter and DN metacharacters, which must sign in as itself. */
  special: Account;
  stop(): Promise<void>;
}

/**
 * One suite, every backend (Dex's storage conformance idea): what a user sees through the password
 * grant must not depend on where their password lives.
 */
export function backendConformance(name: string, makeFixture: () => Promise<BackendFixture>): void {
  describe(`backend conformance: ${name}`, () => {
    let f: BackendFixture;
    let client: { clientId: string; clientSecret: string | null };

    const grant = (username: string, password: string) =>
      postForm(
        `${f.server.url}/oauth/v20/token`,
        { grant_type: 'password', username, password },
        { authorization: basic(client.clientId, client.clientSecret!) },
      );
    const me = async (accessToken: string) =>
      (await (await get(`${f.server.url}/api/oauth/v20/me`, { access_token: accessToken })).json()) as Record<string, unknown>;
    const refused = async (res: Response) => ({ status: res.status, body: await res.json() });
    const wrongPasswordAnswer = { status: 400, body: { error: 'invalid_grant', error_description: 'invalid username or password' } };

    beforeAll(async () => {
      f = await makeFixture();
      client = await f.server.client({ grantTypes: ['password'], scopes: ['openid', 'profile', 'email'] });
    });
    afterAll(() => f?.stop());

    test('the right password signs in, with the same userid every time', async () => {
      const first = await grant(f.active.username, f.active.password);
      expect(first.status).toBe(200);
      const a = await me(((await first.json()) as { access_token: string }).access_token);
      expect(a.uid).toBe(f.active.username);
      const b = await me(((await (await grant(f.active.username, f.active.password)).json()) as { access_token: string }).access_token);
      expect(b.userid).toBe(a.userid);
      expect((await f.server.ctx.users.find(String(a.userid)))?.backend).toBe(f.backendId);
    });

    test('the name is case-insensitive', async () => {
      const res = await grant(f.active.username.toUpperCase(), f.active.password);
      expect(res.status).toBe(200);
      expect((await me(((await res.json()) as { access_token: string }).access_token)).uid).toBe(f.active.username);
    });

    test('a wrong password and an unknown user get the same answer', async () => {
      expect(await refused(await grant(f.active.username, 'not-the-password'))).toEqual(wrongPasswordAnswer);
      expect(await refused(await grant('nobody-by-this-name', 'not-the-password'))).toEqual(wrongPasswordAnswer);
    });

    test('an empty password is refused, by the grant and by the backend itself', async () => {
      const res = await grant(f.active.username, '');
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
      // Straight to the backend: the test directory accepts unauthenticated binds, so a backend that sent
      // this bind would answer yes here.
      const backend = f.server.ctx.identity.members.find((m) => m.id === f.backendId)!.backend;
      expect((await backend.checkPassword(f.active.username, '')).validPassword).toBe(false);
    });

    test('a disabled account is refused even with its right password', async () => {
      expect(await refused(await grant(f.disabled.username, f.disabled.password))).toEqual({
        status: 400,
        body: { error: 'invalid_grant', error_description: 'the account is disabled' },
      });
    });

    test('a name full of filter and DN metacharacters signs in as itself', async () => {
      const res = await grant(f.special.username, f.special.password);
      expect(res.status).toBe(200);
      expect((await me(((await res.json()) as { access_token: string }).access_token)).uid).toBe(f.special.username);
    });

    test.each(['*', `${'alice'})(uid=*`, '*)(|(uid=*', 'alice*', '*)(objectClass=*))(|(uid=*'])(
      'injection through the username (%s) signs nobody in',
      async (name) => {
        expect(await refused(await grant(name, f.active.password))).toEqual(wrongPasswordAnswer);
      },
    );

    test('the refresh grant keeps the user; the backend re-reads an active user and knows no unknown one', async () => {
      const refresher = await f.server.client({ grantTypes: ['password', 'refresh_token'], scopes: ['openid', 'profile'] });
      const auth = { authorization: basic(refresher.clientId, refresher.clientSecret!) };
      const first = (await (
        await postForm(
          `${f.server.url}/oauth/v20/token`,
          { grant_type: 'password', username: f.active.username, password: f.active.password },
          auth,
        )
      ).json()) as { access_token: string; refresh_token: string };
      const refreshed = await postForm(
        `${f.server.url}/oauth/v20/token`,
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        auth,
      );
      expect(refreshed.status).toBe(200);
      const before = await me(first.access_token);
      const after = await me(((await refreshed.json()) as { access_token: string }).access_token);
      expect(after).toMatchObject({ userid: before.userid, uid: f.active.username });

      // `refresh` is optional in the contract; a backend that has it answers for its own users only.
      const backend = f.server.ctx.identity.members.find((m) => m.id === f.backendId)!.backend;
      if (!backend.refresh) return;
      const user = (await f.server.ctx.users.find(String(before.userid)))!;
      expect(await backend.refresh({ username: user.username, externalId: user.externalId })).toMatchObject({
        externalId: user.externalId,
        username: f.active.username,
      });
      expect(await backend.refresh({ username: 'nobody-by-this-name', externalId: 'no-such-entry' })).toBeNull();
    });

    test('health: /readyz reports the backend up while it answers', async () => {
      const ready = await get(`${f.server.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(((await ready.json()) as { backends: Record<string, string> }).backends[f.backendId]).toBe('up');
    });
  });
}
