import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { eventually } from '../helpers/eventually.ts';
import { expectStatus, type ScimHarness, startScimServer, USER_SCHEMA } from '../scim/harness.ts';

type Shown = { id: string; roles: string[]; groups: string[]; disabled: boolean; disabledBy: string | null };

const SHOWN = 'id roles groups disabled disabledBy';

/**
 * docs/directory-sync.md "An administrator's change during a pass stays", the other way round: an admin
 * API change of a user writes the whole row back, so it reads the row locked, and one that starts while
 * a leaver's deprovisioning (a sync pass's, a SCIM client's) is still uncommitted waits for it and
 * keeps it, instead of putting the user back as they were. Only PostgreSQL interleaves transactions:
 * SQLite runs one at a time.
 */
describe('an admin change of a user while another write of that user is uncommitted, on PostgreSQL', () => {
  let h: ScimHarness;
  /** Looks at the database from outside any transaction (one sees pg_stat_activity as it was when it began). */
  let watcher: pg.Client;
  const open: pg.Client[] = [];

  const shown = async (id: string): Promise<Shown> =>
    (await h.graphql<{ user: Shown }>(`query ($id: ID!) { user(id: $id) { ${SHOWN} } }`, { id })).user;

  /**
   * A transaction on its own connection that has written `sql` and not committed: it holds the row
   * until `commit`, as a leaver's deprovisioning holds it until its sessions have ended.
   */
  const uncommitted = async (sql: string, params: unknown[]): Promise<{ commit(): Promise<void> }> => {
    const client = new pg.Client({ connectionString: h.server.db.url });
    await client.connect();
    open.push(client);
    await client.query('begin');
    expect((await client.query(sql, params)).rowCount).toBe(1);
    return {
      async commit() {
        await client.query('commit');
      },
    };
  };

  /** Whether a statement of this database waits for a row lock (the admin change, behind the uncommitted write). */
  const waitingOnLock = async (): Promise<boolean> => {
    const { rows } = await watcher.query(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    return rows[0].n > 0;
  };

  /** A leaver's deprovisioning, as src/users/leavers.ts writes it (`moveState` from enabled). */
  const deprovisioning = (id: string) =>
    uncommitted("update users set disabled = true, disabled_by = 'directory', updated_at = $2 where id = $1 and disabled = false", [
      id,
      Date.now(),
    ]);

  /** `mutation` sent while `competing` holds the row; it is committed once the mutation waits for it. The mutation's answer. */
  const during = async (competing: { commit(): Promise<void> }, mutation: string, variables: Record<string, unknown>) => {
    const answer = h.graphql<Record<string, Shown | boolean>>(mutation, variables);
    await eventually('the admin change waits for the uncommitted write of the user', waitingOnLock);
    await competing.commit();
    return answer;
  };

  const scimUser = async (userName: string): Promise<string> => {
    const created = await h.scim('POST', '/Users', { body: { schemas: [USER_SCHEMA], userName } });
    expectStatus(created, 201);
    return created.body.id as string;
  };

  beforeAll(async () => {
    h = await startScimServer('postgres');
    watcher = new pg.Client({ connectionString: h.server.db.url });
    await watcher.connect();
  });
  afterEach(async () => {
    for (const client of open.splice(0)) await client.end();
  });
  afterAll(async () => {
    await watcher?.end();
    await h?.stop();
  });

  test('roles given to a user whom a SCIM client is deprovisioning are kept, and the user stays deprovisioned', async () => {
    const id = await scimUser('dana');
    const answer = await during(
      await deprovisioning(id),
      `mutation ($id: ID!) { updateUser(id: $id, input: { roles: ["auditor"] }) { ${SHOWN} } }`,
      {
        id,
      },
    );
    expect(answer.updateUser).toMatchObject({ roles: ['auditor'], disabled: true, disabledBy: 'DIRECTORY' });
    expect(await shown(id)).toMatchObject({ roles: ['auditor'], disabled: true, disabledBy: 'DIRECTORY' });
    const scim = await h.scim('GET', `/Users/${id}`);
    expectStatus(scim, 200);
    expect(scim.body.active).toBe(false);
  });

  test('a password set for a user whom a SCIM client is deprovisioning does not enable them again', async () => {
    const id = await scimUser('erin');
    await during(await deprovisioning(id), 'mutation ($id: ID!) { setUserPassword(id: $id, password: "another-long-password") }', { id });
    expect(await shown(id)).toMatchObject({ disabled: true, disabledBy: 'DIRECTORY' });
  });

  test("groups set for a database user whom another administrator is disabling keep that administrator's disabling", async () => {
    const id = await h.server.user('frank', 'a-long-password-1');
    const disabling = await uncommitted("update users set disabled = true, disabled_by = 'admin' where id = $1", [id]);
    const answer = await during(disabling, `mutation ($id: ID!) { setUserGroups(id: $id, groups: ["staff"]) { ${SHOWN} } }`, { id });
    expect(answer.setUserGroups).toMatchObject({ groups: ['staff'], disabled: true, disabledBy: 'ADMIN' });
    expect(await shown(id)).toMatchObject({ groups: ['staff'], disabled: true, disabledBy: 'ADMIN' });
  });
});
