import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Attribute, Change, type Entry } from 'ldapts';
import pino from 'pino';
import plugin from '../../plugins/ldap/index.ts';
import type { Identity } from '../../src/identity/plugin-kit.ts';
import { syncNow } from '../directory-sync/harness.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import type { DatabaseKind } from '../helpers/databases.ts';
import { AD_BASE_DN } from '../helpers/samba.ts';
import { ADMIN_PASSWORD, type TestServer } from '../helpers/server.ts';
import { people, personDn } from './directory.ts';
import { adConfig, dc, refresh, Servers, signIn } from './harness.ts';

/** 1,600 users and one group of them all, in an OU of their own: more than the 1,500 values AD sends of `member` at a time. */
const BULK = `OU=Sync Bulk,${AD_BASE_DN}`;
const BULK_USERS = 1600;
const BULK_GROUP = 'Bulk 1600';

function bulkLdif(): string {
  const dns = Array.from({ length: BULK_USERS }, (_, i) => `CN=bulk${String(i).padStart(4, '0')},${BULK}`);
  const users = dns.map(
    (dn, i) => `dn: ${dn}\nobjectClass: user\nsAMAccountName: bulk${String(i).padStart(4, '0')}\nuserAccountControl: 512\n`,
  );
  const group = `dn: CN=${BULK_GROUP},${BULK}\nobjectClass: group\n${dns.map((dn) => `member: ${dn}`).join('\n')}\n`;
  return [`dn: ${BULK}\nobjectClass: organizationalUnit\n`, ...users, group].join('\n');
}

/** Added once for the suite, offline in one batch (seconds; over LDAP it would take minutes). */
let bulkAdded: Promise<void> | undefined;
const addBulk = () => (bulkAdded ??= dc().addOffline(bulkLdif()));

/** The bulk OU as a backend of its own: its users, and its groups (AD's nesting by the in-chain rule). */
const bulkConfig = () => {
  const base = adConfig();
  return adConfig({
    userSearch: { ...(base.userSearch as Record<string, unknown>), baseDN: BULK },
    groupSearch: { baseDN: BULK, filter: '(objectClass=group)', nested: 'matchingRule' },
    sync: { interval: 0 },
  });
};

const setUac = (dn: string, value: string) =>
  dc().asAdmin((c) =>
    c.modify(dn, new Change({ operation: 'replace', modification: new Attribute({ type: 'userAccountControl', values: [value] }) })),
  );

/** How many values each attribute of an entry came with, under the name the directory gave it. */
const valueCounts = ({ dn: _, ...attrs }: Entry) =>
  Object.fromEntries(Object.entries(attrs).map(([name, v]) => [name, Array.isArray(v) ? v.length : 1]));

type Listed = { username: string; groups: string[]; disabled: boolean; disabledBy: string | null };

async function user(server: TestServer, token: string, username: string): Promise<Listed | undefined> {
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
}

/** Directory sync against Active Directory (docs/directory-sync.md): AD's account state, and AD's large groups read whole. */
export function syncTests(kind: DatabaseKind): void {
  describe(`AD directory sync on ${kind}`, () => {
    const servers = new Servers(kind);
    beforeAll(() => addBulk(), 120_000);
    afterAll(() => servers.stopAll());

    test('a user disabled in AD (userAccountControl ACCOUNTDISABLE) is deprovisioned by the next pass, and enabled again by the one after re-enabling', async () => {
      const server = await servers.start(adConfig({ sync: { interval: 0, maxLeaverShare: 0.5 } }));
      const token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
      expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', deprovisioned: 0 });
      expect(await user(server, token, 'alice')).toMatchObject({ disabled: false, disabledBy: null });
      // dora is disabled in the directory: listed, never given a record.
      expect(await user(server, token, 'dora')).toBeUndefined();

      const signedIn = await signIn(server, 'alice', people.alice.password);
      expect(signedIn.status).toBe(200);
      await setUac(personDn(people.alice), '514');
      try {
        expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', deprovisioned: 1, error: null });
        expect(await user(server, token, 'alice')).toMatchObject({ disabled: true, disabledBy: 'DIRECTORY' });
        // Everything she held is gone without her signing in again: her refresh token is refused.
        const refused = await refresh(server, signedIn.body.refresh_token!);
        expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_refresh_token' } });
      } finally {
        await setUac(personDn(people.alice), '512');
      }
      expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', reenabled: 1 });
      expect(await user(server, token, 'alice')).toMatchObject({ disabled: false, disabledBy: null });
    });

    test(`a group of ${BULK_USERS.toLocaleString('en-US')} users arrives whole, read range by range (AD sends 1,500 values of member at a time)`, async () => {
      // What the DC does: asked for member by name, Samba sends all 1,600 at once (a Microsoft DC would
      // not); asked for its first range, it sends 1,500 and names them so, as a Microsoft DC does.
      const group = `CN=${BULK_GROUP},${BULK}`;
      const read = (attr: string) =>
        dc().asAdmin(async (c) => (await c.search(group, { scope: 'base', attributes: [attr] })).searchEntries[0]!);
      expect(valueCounts(await read('member'))).toEqual({ member: BULK_USERS });
      expect(valueCounts(await read('member;range=0-1499'))).toEqual({ 'member;range=0-1499': 1500 });

      // The backend's own listing: every member has the group, though the group came in two reads.
      const logged: Array<Record<string, unknown>> = [];
      const backend = await plugin.create(plugin.configSchema.parse(bulkConfig()), {
        id: 'corp',
        logger: pino({ level: 'debug' }, { write: (line: string) => logged.push(JSON.parse(line)) }),
        db: undefined as never,
        localUsers: undefined as never,
      });
      const listed: Identity[] = [];
      try {
        for await (const batch of backend.sync!.listUsers()) listed.push(...batch);
      } finally {
        await backend.close?.();
      }
      expect(listed).toHaveLength(BULK_USERS);
      expect(listed.filter((u) => u.groups?.includes(BULK_GROUP))).toHaveLength(BULK_USERS);
      // `member;range=0-1499` in the group search, then one more read (`member;range=1500-*`) for the last 100.
      const ranged = logged.filter((l) => l.msg === 'directory sync read the rest of a large group range by range');
      expect(ranged).toEqual([expect.objectContaining({ members: BULK_USERS, reads: 1 })]);
      expect((ranged[0]!.group as string).toLowerCase()).toBe(group.toLowerCase());

      // And through a pass: a record for each, with the group.
      const server = await servers.start(bulkConfig());
      const token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
      expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', users: BULK_USERS, created: BULK_USERS });
      for (const name of ['bulk0000', 'bulk0799', 'bulk1599']) expect((await user(server, token, name))?.groups).toEqual([BULK_GROUP]);
    });
  });
}
