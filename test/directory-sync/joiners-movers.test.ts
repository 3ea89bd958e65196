import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { groupDn } from '../fixtures/ldap/directory.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import type { CodeFlowClient } from '../helpers/flow.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { addMember, addPerson, dnOf, signedIn, syncNow } from './harness.ts';

type Listed = {
  username: string;
  email: string;
  groups: string[];
  attributes: Record<string, unknown>;
  disabled: boolean;
  disabledBy: string | null;
};

/** Joiners, movers and returners (docs/directory-sync.md "What a pass does") against a real slapd. */
describe.each(databaseKinds)('directory sync of joiners, movers and returners on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let token: string;
  let app: CodeFlowClient;

  const user = async (username: string): Promise<Listed | undefined> => {
    const answer = await graphqlPost(
      server,
      token,
      'query ($s: String) { users(search: $s) { edges { node { username email groups attributes disabled disabledBy } } } }',
      { s: username },
    );
    const edges = (answer.data!.users as { edges: Array<{ node: Listed }> }).edges;
    return edges.map((e) => e.node).find((u) => u.username === username);
  };

  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true });
    server = await startTestServer(
      kind,
      ldapChain(ldapBackendConfig(slapd, { extraAttributes: ['employeeNumber'], sync: { interval: 0, maxLeaverShare: 0.5 } })),
    );
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    app = await server.client({ scopes: ['openid'], grantTypes: ['authorization_code', 'refresh_token'] });
  });
  afterAll(async () => {
    await server?.stop();
    await slapd?.destroy();
  });

  test('the first pass makes a record for every enabled directory user, and says so in lastSync and the metrics', async () => {
    expect(await user('alice')).toBeUndefined();
    const { pass, errors } = await syncNow(server, token);
    expect(errors).toBeUndefined();
    // alice, bob and the special name; carol is disabled in the directory and never had a record.
    expect(pass).toEqual({ outcome: 'APPLIED', users: 4, created: 3, updated: 0, deprovisioned: 0, reenabled: 0, error: null });
    expect(await user('alice')).toMatchObject({ email: 'alice@example.org', attributes: { employeeNumber: '1001' }, disabled: false });
    expect(await user('carol')).toBeUndefined();

    const backends = await graphqlPost(
      server,
      token,
      '{ identityBackends { id syncInterval lastSync { at outcome users created updated deprovisioned reenabled error } } }',
    );
    const list = backends.data?.identityBackends as Array<{
      id: string;
      syncInterval: number | null;
      lastSync: Record<string, unknown> | null;
    }>;
    expect(list.find((b) => b.id === 'local')).toMatchObject({ syncInterval: null, lastSync: null });
    const corp = list.find((b) => b.id === 'corp')!;
    expect(corp.syncInterval).toBe(0);
    expect(corp.lastSync).toMatchObject({ outcome: 'APPLIED', users: 4, created: 3, error: null });
    expect(Date.now() - Date.parse(corp.lastSync!.at as string)).toBeLessThan(60_000);

    const metrics = await scrape(server.url);
    expect(sample(metrics, 'latchkey_directory_sync_users', { backend: 'corp', outcome: 'created' })).toBe(3);
    expect(sample(metrics, 'latchkey_directory_sync_refused', { backend: 'corp' })).toBe(0);
    expect(sample(metrics, 'latchkey_directory_sync_last_success_timestamp_seconds', { backend: 'corp' })).toBeGreaterThan(
      Date.now() / 1000 - 60,
    );
    expect(metrics.find((f) => f.name === 'latchkey_directory_sync_duration_seconds')?.type).toBe('HISTOGRAM');
  });

  test('a joiner shows up in users after a pass, before any sign-in', async () => {
    await addPerson(slapd, 'june', { employeeNumber: '7001' });
    expect(await user('june')).toBeUndefined();
    const { pass } = await syncNow(server, token);
    expect(pass).toMatchObject({ outcome: 'APPLIED', created: 1, updated: 0, deprovisioned: 0 });
    expect(await user('june')).toMatchObject({
      email: 'june@example.org',
      groups: [],
      attributes: { employeeNumber: '7001' },
      disabled: false,
    });
    // A pass over an unchanged directory changes nothing.
    expect((await syncNow(server, token)).pass).toMatchObject({
      outcome: 'APPLIED',
      created: 0,
      updated: 0,
      deprovisioned: 0,
      reenabled: 0,
    });
  });

  test("a mover's new group (and the group it nests in) and attribute are applied", async () => {
    await addPerson(slapd, 'moe', { employeeNumber: '7002' });
    await syncNow(server, token);
    await addMember(slapd, groupDn('engineers'), dnOf('moe'));
    await slapd.modify(dnOf('moe'), 'employeeNumber', ['8002']);
    await slapd.modify(dnOf('moe'), 'mail', ['moe@new.example.org']);
    const { pass } = await syncNow(server, token);
    expect(pass).toMatchObject({ outcome: 'APPLIED', created: 0, updated: 1, deprovisioned: 0 });
    const moe = await user('moe');
    expect([...moe!.groups].sort()).toEqual(['engineers', 'staff']);
    expect(moe).toMatchObject({ email: 'moe@new.example.org', attributes: { employeeNumber: '8002' } });
  });

  test('a user locked in the directory is deprovisioned; unlocked, the next pass brings them back, and they sign in', async () => {
    await addPerson(slapd, 'ray');
    await syncNow(server, token);
    await signedIn(server, app, 'ray');

    await slapd.modify(dnOf('ray'), 'pwdAccountLockedTime', ['000001010000Z']);
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', deprovisioned: 1, reenabled: 0 });
    expect(await user('ray')).toMatchObject({ disabled: true, disabledBy: 'DIRECTORY' });

    await slapd.modify(dnOf('ray'), 'pwdAccountLockedTime', []);
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', deprovisioned: 0, reenabled: 1 });
    expect(await user('ray')).toMatchObject({ disabled: false, disabledBy: null });
    const id = (await server.ctx.users.findByUsername('corp', 'ray'))!.id;
    const back = await server.sql('audit_events').where({ kind: 'user.reenabled', user_id: id });
    expect(back.map((r) => JSON.parse(String(r.details)))).toEqual([{ backend: 'corp' }]);
    await signedIn(server, app, 'ray');
  });

  test('an administrator disabling is never undone by a pass', async () => {
    await addPerson(slapd, 'ada');
    await syncNow(server, token);
    const id = (await server.ctx.users.findByUsername('corp', 'ada'))!.id;
    const disabled = await graphqlPost(
      server,
      token,
      'mutation ($id: ID!) { updateUser(id: $id, input: { disabled: true }) { disabledBy } }',
      { id },
    );
    expect(disabled.errors).toBeUndefined();
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', reenabled: 0, deprovisioned: 0 });
    expect(await user('ada')).toMatchObject({ disabled: true, disabledBy: 'ADMIN' });
  });

  test("a backend without sync, or an unknown one, is refused in the admin API's words", async () => {
    const local = await syncNow(server, token, 'local');
    expect(local.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'id' } });
    expect(local.errors?.[0]?.message).toContain('has no directory sync');
    const unknown = await syncNow(server, token, 'nope');
    expect(unknown.errors?.[0]).toMatchObject({ extensions: { code: 'NOT_FOUND', field: 'id' } });
  });
});
