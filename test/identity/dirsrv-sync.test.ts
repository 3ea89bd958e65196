import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { people, personDn } from '../fixtures/ldap/directory.ts';
import { syncNow } from '../directory-sync/harness.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { dirsrvBackendConfig, startDirsrv, type Dirsrv } from '../helpers/dirsrv.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapChain } from '../helpers/slapd.ts';

/**
 * Directory sync against a real 389 Directory Server (docs/directory-sync.md): a paged read of its
 * users, and its own way of disabling an account, `nsAccountLock`, seen by a pass without anyone
 * signing in. One server for the whole file: dscreate takes seconds.
 */
let ds: Dirsrv;
beforeAll(async () => {
  ds = await startDirsrv();
}, 300_000);
afterAll(() => ds?.destroy());

type Listed = { username: string; groups: string[]; disabled: boolean; disabledBy: string | null };

describe.each(databaseKinds)('directory sync of 389 Directory Server on %s', (kind) => {
  let server: TestServer;
  let token: string;
  beforeAll(async () => {
    server = await startTestServer(kind, ldapChain(dirsrvBackendConfig(ds, { sync: { interval: 0, maxLeaverShare: 0.5 } })));
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
  });
  afterAll(() => server?.stop());

  const user = async (username: string): Promise<Listed | undefined> => {
    const answer = await graphqlPost(
      server,
      token,
      'query ($s: String) { users(search: $s) { edges { node { username groups disabled disabledBy } } } }',
      {
        s: username,
      },
    );
    const edges = (answer.data?.users as { edges: Array<{ node: Listed }> } | undefined)?.edges ?? [];
    return edges.map((e) => e.node).find((u) => u.username === username);
  };

  test('a user locked with nsAccountLock is deprovisioned by the next pass, and enabled again once unlocked', async () => {
    const first = (await syncNow(server, token)).pass;
    expect(first).toMatchObject({ outcome: 'APPLIED', error: null });
    // carol is locked in the fixture: listed, never given a record.
    expect(await user('carol')).toBeUndefined();
    expect((await user('bob'))?.groups.sort()).toEqual(['engineers', 'loop-a', 'loop-b', 'staff']);

    const app = await server.client({ grantTypes: ['password', 'refresh_token'], scopes: ['openid'] });
    const auth = { authorization: basic(app.clientId, app.clientSecret!) };
    const signIn = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username: 'bob', password: people.bob.password, scope: 'openid' },
      auth,
    );
    expect(signIn.status).toBe(200);
    const { refresh_token } = (await signIn.json()) as { refresh_token: string };

    await ds.modify(personDn(people.bob), 'nsAccountLock', ['true']);
    try {
      expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', deprovisioned: 1, error: null });
      expect(await user('bob')).toMatchObject({ disabled: true, disabledBy: 'DIRECTORY' });
      // bob's tokens went with the pass, not at his next sign-in: the refresh token is refused.
      const refresh = await postForm(`${server.url}/oauth/v20/token`, { grant_type: 'refresh_token', refresh_token }, auth);
      expect(refresh.status).toBe(400);
    } finally {
      await ds.modify(personDn(people.bob), 'nsAccountLock', []);
    }
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', reenabled: 1 });
    expect(await user('bob')).toMatchObject({ disabled: false, disabledBy: null });
  });
});
