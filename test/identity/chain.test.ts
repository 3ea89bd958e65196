import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const plugin = fileURLToPath(new URL('../fixtures/static-plugin/index.ts', import.meta.url));

/** The backend chain of docs/identity-backends.md with a plugin loaded from outside `plugins/`, in front of the database. */
describe.each(databaseKinds)('identity backend chain on %s', (kind) => {
  let up: TestServer;
  let down: TestServer;

  const grant = (server: TestServer, c: { clientId: string; clientSecret: string | null }, username: string, password: string) =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password },
      { authorization: basic(c.clientId, c.clientSecret!) },
    );

  beforeAll(async () => {
    const users = {
      kim: { password: 'kim-directory-pw', email: 'kim@corp.example', groups: ['eng'] },
      shared: { password: 'directory-pw' },
    };
    up = await startTestServer(kind, {
      identity: {
        backends: [
          { id: 'corp', plugin, config: { users } },
          { id: 'local', plugin: 'database' },
        ],
      },
    });
    down = await startTestServer(kind, {
      identity: {
        backends: [
          { id: 'corp', plugin, config: { down: true, users } },
          { id: 'local', plugin: 'database' },
        ],
      },
    });
    for (const s of [up, down]) {
      await s.user('lee', 'lee-local-password');
      await s.user('shared', 'database-pw');
    }
  });
  afterAll(async () => {
    await up?.stop();
    await down?.stop();
  });

  test('a plugin user signs in; gets a stable local record refreshed from the backend', async () => {
    const c = await up.client({ grantTypes: ['password'], scopes: ['openid', 'email', 'groups'] });
    const first = (await (await grant(up, c, 'kim', 'kim-directory-pw')).json()) as { access_token: string };
    const me = (await (await get(`${up.url}/api/oauth/v20/me`, { access_token: first.access_token })).json()) as Record<string, unknown>;
    expect(me).toMatchObject({ uid: 'kim', email: 'kim@corp.example', groups: ['eng'] });
    const again = (await (await grant(up, c, 'kim', 'kim-directory-pw')).json()) as { access_token: string };
    const me2 = (await (await get(`${up.url}/api/oauth/v20/me`, { access_token: again.access_token })).json()) as Record<string, unknown>;
    expect(me2.userid).toBe(me.userid);
    const record = (await up.ctx.users.find(String(me.userid)))!;
    expect(record.backend).toBe('corp');
  });

  test('the first backend holding a name owns it: never tried against the next', async () => {
    const c = await up.client({ grantTypes: ['password'] });
    expect((await grant(up, c, 'shared', 'directory-pw')).status).toBe(200);
    const res = await grant(up, c, 'shared', 'database-pw');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_grant');
    // Users only the database holds still sign in behind it.
    expect((await grant(up, c, 'lee', 'lee-local-password')).status).toBe(200);
  });

  test('an unreachable backend: temporarily_unavailable (503), never a failed login; the next backend still answers', async () => {
    const c = await down.client({ grantTypes: ['password'] });
    for (let i = 0; i < 7; i++) {
      const res = await grant(down, c, 'kim', 'kim-directory-pw');
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toBe('temporarily_unavailable');
    }
    // Seven outages did not throttle anyone: each attempt was counted before the check and given back.
    expect(await down.sql('login_throttle').where('failures', '>', 0)).toEqual([]);
    expect((await grant(down, c, 'lee', 'lee-local-password')).status).toBe(200);

    const ready = await get(`${down.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ database: 'up', backends: { corp: 'down', local: 'up' } });
  });

  test('a refusal answered after a backend was down names the skipped backend: the account may be its user, whom an outage never counts against', async () => {
    // "shared" is also a directory user: with the directory down, the local account of that name answers.
    expect(await down.ctx.identity.signIn('shared', 'directory-pw')).toMatchObject({
      ok: false,
      reason: 'invalid_credentials',
      backend: 'local',
      skipped: ['corp'],
    });
    expect(await down.ctx.identity.signIn('nobody-by-this-name', 'x')).toMatchObject({
      ok: false,
      reason: 'unavailable',
      backends: ['corp'],
    });
    // With every backend answering, nothing was skipped.
    expect(await up.ctx.identity.signIn('lee', 'not-lees-password')).toMatchObject({
      ok: false,
      reason: 'invalid_credentials',
      backend: 'local',
      skipped: [],
    });
    expect(await up.ctx.identity.signIn('nobody-by-this-name', 'x')).toEqual({ ok: false, reason: 'invalid_credentials', skipped: [] });
  });

  test('an empty password is refused as a malformed request, before the chain', async () => {
    const c = await up.client({ grantTypes: ['password'] });
    const res = await postForm(
      `${up.url}/oauth/v20/token`,
      { grant_type: 'password', username: 'kim', password: '' },
      { authorization: basic(c.clientId, c.clientSecret!) },
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
  });
});
