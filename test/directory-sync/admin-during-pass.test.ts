import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { passSeamForTests } from '../../src/directory-sync/pass.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { dnOf, type PassAnswer, syncNow } from './harness.ts';

type Shown = {
  id: string;
  email: string | null;
  displayName: string | null;
  roles: string[];
  disabled: boolean;
  disabledBy: string | null;
};

/**
 * docs/directory-sync.md "What a pass never touches": what an administrator changes through the admin
 * API while a pass has read the records and planned, but not yet written, survives the pass; what
 * the directory changes still lands.
 */
describe.each(databaseKinds)('an administrator and a directory sync pass at once on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let token: string;

  const user = async (username: string): Promise<Shown> => {
    const answer = await graphqlPost(
      server,
      token,
      'query ($s: String) { users(search: $s) { edges { node { id username email displayName roles disabled disabledBy } } } }',
      { s: username },
    );
    const edges = (answer.data!.users as { edges: Array<{ node: Shown & { username: string } }> }).edges;
    return edges.map((e) => e.node).find((u) => u.username === username)!;
  };

  const updateUser = async (id: string, input: Record<string, unknown>) => {
    const answer = await graphqlPost(
      server,
      token,
      'mutation ($id: ID!, $input: UpdateUserInput!) { updateUser(id: $id, input: $input) { id } }',
      {
        id,
        input,
      },
    );
    expect(answer.errors).toBeUndefined();
  };

  /**
   * A pass stopped once it has planned, before it writes: `during` runs then, and the pass goes on
   * when it is done. The pass's answer.
   */
  const passWith = async (during: () => Promise<void>): Promise<PassAnswer | undefined> => {
    let planned!: () => void;
    const reached = new Promise<void>((resolve) => {
      planned = resolve;
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    passSeamForTests.planned = async () => {
      planned();
      await gate;
    };
    const passing = syncNow(server, token);
    try {
      await Promise.race([reached, passing.then(() => Promise.reject(new Error('the pass ended without planning')))]);
      await during();
    } finally {
      release();
      passSeamForTests.planned = undefined;
    }
    const { pass, errors } = await passing;
    expect(errors).toBeUndefined();
    return pass;
  };

  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true });
    // No adminGroups: the directory does not report roles, so they are the administrators'.
    server = await startTestServer(
      kind,
      ldapChain(ldapBackendConfig(slapd, { adminGroups: [], sync: { interval: 0, maxLeaverShare: 0.9 } })),
    );
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', created: 3 });
  });
  afterEach(() => {
    passSeamForTests.planned = undefined;
  });
  afterAll(async () => {
    await server?.stop();
    await slapd?.destroy();
  });

  test('roles given while a pass that changes the user is planned survive it; the directory changes land, then and next pass', async () => {
    const alice = await user('alice');
    expect(alice.roles).toEqual([]);
    // A mover: the pass plans to write alice's record.
    await slapd.modify(dnOf('alice'), 'cn', ['Alice Kingsleigh']);

    const pass = await passWith(() => updateUser(alice.id, { roles: ['auditor'] }));
    expect(pass).toMatchObject({ outcome: 'APPLIED', created: 0, updated: 1, error: null });
    expect(await user('alice')).toMatchObject({ displayName: 'Alice Kingsleigh', roles: ['auditor'] });

    await slapd.modify(dnOf('alice'), 'mail', ['alice@new.example.org']);
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', updated: 1 });
    expect(await user('alice')).toMatchObject({ email: 'alice@new.example.org', displayName: 'Alice Kingsleigh', roles: ['auditor'] });
  });

  test("an administrator's disabling while a pass plans the user's return is not undone, by this pass or the next", async () => {
    await slapd.modify(dnOf('bob'), 'pwdAccountLockedTime', ['000001010000Z']);
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', deprovisioned: 1 });
    const bob = await user('bob');
    expect(bob).toMatchObject({ disabled: true, disabledBy: 'DIRECTORY' });

    // Unlocked in the directory: a returner, whom an administrator disables before the pass writes.
    await slapd.modify(dnOf('bob'), 'pwdAccountLockedTime', []);
    const pass = await passWith(() => updateUser(bob.id, { disabled: true }));
    expect(pass).toMatchObject({ outcome: 'APPLIED', reenabled: 0, deprovisioned: 0 });
    expect(await user('bob')).toMatchObject({ disabled: true, disabledBy: 'ADMIN' });

    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', reenabled: 0 });
    expect(await user('bob')).toMatchObject({ disabled: true, disabledBy: 'ADMIN' });
  });
});
