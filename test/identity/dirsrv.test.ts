import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { groupDn, people, PEOPLE, personDn, type Person } from '../fixtures/ldap/directory.ts';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.ts';
import { dirsrvBackendConfig, startDirsrv, type Dirsrv } from '../helpers/dirsrv.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapChain } from '../helpers/slapd.ts';
import { backendConformance, type BackendFixture } from './conformance-suite.ts';

/**
 * The LDAP backend against a real 389 Directory Server: the shared conformance suite, and the account
 * states only 389 DS has (`nsAccountLock`, which it enforces by refusing the bind itself).
 * One server for the whole file: dscreate takes seconds, and every test leaves the data as it found it.
 */
let ds: Dirsrv;
beforeAll(async () => {
  ds = await startDirsrv();
}, 300_000);
afterAll(() => ds?.destroy());

async function fixture(kind: DatabaseKind): Promise<BackendFixture> {
  const server = await startTestServer(kind, ldapChain(dirsrvBackendConfig(ds)));
  const account = (p: Person) => ({ username: p.uid, password: p.password });
  // carol is locked with nsAccountLock: 389 DS refuses her bind whatever the password.
  return {
    server,
    backendId: 'corp',
    active: account(people.alice),
    disabled: account(people.carol),
    special: account(people.special),
    stop: () => server.stop(),
  };
}

for (const kind of databaseKinds) backendConformance(`ldap on 389 Directory Server on ${kind}`, () => fixture(kind));

describe.each(databaseKinds)('389 Directory Server account state on %s', (kind) => {
  const servers: TestServer[] = [];
  const serve = async (extra: Record<string, unknown> = {}) => {
    const s = await startTestServer(kind, ldapChain(dirsrvBackendConfig(ds, extra)));
    servers.push(s);
    return s;
  };
  afterAll(() => Promise.all(servers.map((s) => s.stop())));

  /** A signed-in user's refresh token, and the two grants the test repeats. */
  async function session(server: TestServer, p: Person) {
    const c = await server.client({ grantTypes: ['password', 'refresh_token'], scopes: ['openid', 'profile', 'groups'] });
    const auth = { authorization: basic(c.clientId, c.clientSecret!) };
    const password = async () => {
      const res = await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username: p.uid, password: p.password, scope: 'openid profile groups' },
        auth,
      );
      return {
        status: res.status,
        body: (await res.json()) as { error?: string; error_description?: string; refresh_token?: string; access_token?: string },
      };
    };
    const first = await password();
    expect(first.status).toBe(200);
    let token = first.body.refresh_token!;
    const refresh = async () => {
      const res = await postForm(`${server.url}/oauth/v20/token`, { grant_type: 'refresh_token', refresh_token: token }, auth);
      const body = (await res.json()) as { error?: string; refresh_token?: string };
      if (res.status === 200) token = body.refresh_token!;
      return { status: res.status, error: body.error };
    };
    return { password, refresh, accessToken: first.body.access_token! };
  }

  test('a user locked with nsAccountLock can neither refresh nor sign in; unlocked, both work again', async () => {
    const server = await serve();
    const bob = await session(server, people.bob);
    expect((await bob.refresh()).status).toBe(200);

    await ds.modify(personDn(people.bob), 'nsAccountLock', ['true']);
    try {
      // 389 DS itself now refuses the bind ("Account inactivated", result 53): an answer, not an outage.
      expect(await ds.rawBind(personDn(people.bob), people.bob.password)).toMatch(/Account inactivated/);
      expect(await bob.refresh()).toEqual({ status: 400, error: 'invalid_grant' });
      expect(await bob.password()).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'the account is disabled' } });
    } finally {
      await ds.modify(personDn(people.bob), 'nsAccountLock', []);
    }
    // The refused refresh did not spend the token; and nothing was counted as an outage.
    expect((await bob.refresh()).status).toBe(200);
    expect((await bob.password()).status).toBe(200);
    expect(((await (await get(`${server.url}/readyz`)).json()) as { backends: Record<string, string> }).backends.corp).toBe('up');
  });

  test('a user the configured filter no longer matches (removed from the group it requires) can neither refresh nor sign in', async () => {
    const staff = groupDn('staff');
    const server = await serve({
      userSearch: { baseDN: PEOPLE, filter: `(&(objectClass=inetOrgPerson)(uid={username})(memberOf=${staff}))` },
    });
    const alice = await session(server, people.alice);
    await ds.change(staff, 'delete', 'member', personDn(people.alice));
    try {
      expect(await alice.refresh()).toEqual({ status: 400, error: 'invalid_grant' });
      expect(await alice.password()).toEqual({
        status: 400,
        body: { error: 'invalid_grant', error_description: 'invalid username or password' },
      });
    } finally {
      await ds.change(staff, 'add', 'member', personDn(people.alice));
    }
    expect((await alice.refresh()).status).toBe(200);
  });

  test('groups come from the memberOf plugin (nested ones too); ldaps:// verifies with the CA dscreate made', async () => {
    const server = await serve({ url: ds.ldapsUrl, tls: { ca: ds.ca } });
    const bob = await session(server, people.bob);
    const me = (await (await get(`${server.url}/api/oauth/v20/me`, { access_token: bob.accessToken })).json()) as { groups: string[] };
    expect([...me.groups].sort()).toEqual(['engineers', 'loop-a', 'loop-b', 'staff']);
  });
});
