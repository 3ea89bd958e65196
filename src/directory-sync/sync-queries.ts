/**
 * Directory sync's SQL (docs/directory-sync.md "What a pass does"): the lease and last outcome of
 * `directory_syncs`, the local records of a backend page by page, and the bulk writes of a pass
 * (a few statements per batch of users, never one round trip per user).
 */
import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { num, numOrNull } from '../db/rows.ts';
import type { User } from '../users/model.ts';
import { joinedUser, joinedUserColumns } from '../users/queries.ts';
import type { LastSync, ProfileUpdate, SyncCounts, SyncOutcome } from './model.ts';

/** A refusal's error starts so: the row keeps one text column for both kinds of error. */
const REFUSED = 'refused: ';

/** The profile columns a pass writes; the account state is written only by deprovisioning and re-enabling. */
const PROFILE = [
  'username',
  'username_key',
  'email',
  'email_verified',
  'display_name',
  'roles',
  'groups',
  'attributes',
  'updated_at',
] as const;
/** Every column of a new record. */
const ALL = ['id', 'backend', 'external_id', ...PROFILE, 'password_hash', 'disabled', 'disabled_by', 'created_at'] as const;
/** The profile columns a backend may leave to the administrators, and the flags that say it did (`ProfileUpdate.keep`). */
const KEPT = { roles: 'keep_roles', attributes: 'keep_attributes' } as const;
type Column = (typeof ALL)[number] | (typeof KEPT)[keyof typeof KEPT];
const PG_TYPES: Record<Column, string> = {
  id: 'text',
  backend: 'text',
  external_id: 'text',
  username: 'text',
  username_key: 'text',
  email: 'text',
  email_verified: 'boolean',
  display_name: 'text',
  roles: 'text',
  groups: 'text',
  attributes: 'text',
  updated_at: 'bigint',
  password_hash: 'text',
  disabled: 'boolean',
  disabled_by: 'text',
  created_at: 'bigint',
  keep_roles: 'boolean',
  keep_attributes: 'boolean',
};

/** A user's row as users/queries.ts writes it. */
function toRow(u: User): Record<string, unknown> {
  return {
    id: u.id,
    backend: u.backend,
    external_id: u.externalId,
    username: u.username,
    username_key: u.username.toLowerCase(),
    email: u.email,
    email_verified: u.emailVerified,
    display_name: u.displayName,
    password_hash: u.passwordHash,
    roles: JSON.stringify(u.roles),
    groups: JSON.stringify(u.groups),
    attributes: Object.keys(u.attributes).length > 0 ? JSON.stringify(u.attributes) : null,
    disabled: u.disabled,
    disabled_by: u.disabled ? (u.disabledBy ?? 'admin') : null,
    created_at: u.createdAt,
    updated_at: u.updatedAt,
  };
}

/**
 * Many rows as one JSON parameter, unpacked by the database into a table `v` of `columns`
 * (`jsonb_to_recordset`, SQLite's `json_each`): a batch is one short statement, whatever its size,
 * with no SQL text of thousands of placeholders to build and parse. Each row may carry more columns
 * than the statement takes.
 */
function rowsOf(db: Knex, rows: Array<Record<string, unknown>>, columns: readonly Column[]): { from: string; rows: string } {
  const json = JSON.stringify(rows);
  if (db.client.dialect === 'postgresql')
    return { from: `jsonb_to_recordset(?::jsonb) as v(${columns.map((c) => `"${c}" ${PG_TYPES[c]}`).join(', ')})`, rows: json };
  return {
    from: `(select ${columns.map((c) => `json_extract(value, '$.${c}') as "${c}"`).join(', ')} from json_each(?)) as v`,
    rows: json,
  };
}

/**
 * Many rows' profile columns in one statement, joined on the id. A column its backend did not report
 * keeps what the row holds when the statement runs (`keep_…`), never the value the pass read seconds
 * before, which an administrator may have changed since. Every other column it writes comes from the
 * directory's listing, not from that read, so no update has to wait for the row to be unchanged
 * (`where updated_at = <as read>`), which would also take a millisecond timestamp, set by the
 * clocks of several hosts, for a version.
 */
function bulkUpdate(db: Knex, updates: ProfileUpdate[]) {
  const flagged = updates.map(({ user, keep }) => {
    const r = toRow(user);
    r[KEPT.roles] = keep.roles;
    r[KEPT.attributes] = keep.attributes;
    return r;
  });
  const { from, rows } = rowsOf(db, flagged, ['id', ...PROFILE, KEPT.roles, KEPT.attributes]);
  const row = db.client.dialect === 'postgresql' ? 'u' : 'users';
  const set = PROFILE.map((c) =>
    c in KEPT ? `"${c}" = case when v."${KEPT[c as keyof typeof KEPT]}" then ${row}."${c}" else v."${c}" end` : `"${c}" = v."${c}"`,
  ).join(', ');
  const target = db.client.dialect === 'postgresql' ? 'users as u' : 'users';
  return db.raw(`update ${target} set ${set} from ${from} where ${row}.id = v.id`, [rows]);
}

/** Many new rows in one statement; a row that clashes with one inserted meanwhile (a sign-in's) is left out. */
async function bulkInsert(db: Knex, users: User[]): Promise<number> {
  const { from, rows } = rowsOf(db, users.map(toRow), ALL);
  const columns = ALL.map((c) => `"${c}"`).join(', ');
  // SQLite reads `on conflict` after a select's `from` as a join's unless a `where` comes first.
  const result = await db.raw(
    `insert into users (${columns}) select ${columns} from ${from} where true on conflict do nothing returning id`,
    [rows],
  );
  return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows).length;
}

function toLastSync(r: Record<string, unknown>): LastSync {
  const error = (r.error as string | null) ?? null;
  const outcome: SyncOutcome = error === null ? 'applied' : error.startsWith(REFUSED) ? 'refused' : 'failed';
  return {
    backend: String(r.backend),
    at: num(r.last_at),
    lastSuccessAt: numOrNull(r.last_success_at),
    durationMs: num(r.duration_ms),
    users: num(r.users),
    created: num(r.created),
    updated: num(r.updated),
    deprovisioned: num(r.deprovisioned),
    reenabled: num(r.reenabled),
    outcome,
    error,
  };
}

export const syncQueries = ({ knex: db }: Database) => ({
  /**
   * Whether a statement runs on this process's event loop (SQLite, in the process) rather than in a
   * database server while the loop is free (PostgreSQL): a pass rests after its writes only then.
   */
  onEventLoop: db.client.dialect !== 'postgresql',

  /**
   * A page of the local records of `backend`, in the order of their external ids, from the one after
   * `after` (from the first without it). A pass reads them page by page, each a short statement, not
   * 100,000 rows in one (on SQLite a statement holds the event loop while it runs).
   */
  async localUsersPage(backend: string, after: string | undefined, limit: number): Promise<User[]> {
    const rows: Array<Record<string, unknown>> = await db.raw(
      `select ${joinedUserColumns('u')} from users u where u.backend = ?${after === undefined ? '' : ' and u.external_id > ?'} order by u.external_id limit ?`,
      after === undefined ? [backend, limit] : [backend, after, limit],
    );
    // knex answers a raw select with the rows (SQLite) or a result holding them (PostgreSQL).
    const list = Array.isArray(rows) ? rows : (rows as { rows: Array<Record<string, unknown>> }).rows;
    return list.map((r) => joinedUser(r)!);
  },

  /** Inserts new records; one that another process inserted meanwhile is left out. How many were inserted. */
  async insertUsers(users: User[]): Promise<number> {
    if (users.length === 0) return 0;
    return bulkInsert(db, users);
  },

  /** Writes the profile columns (not the account state) of existing records, but those each leaves to the administrators. */
  async updateProfiles(updates: ProfileUpdate[]): Promise<void> {
    if (updates.length > 0) await bulkUpdate(db, updates);
  },

  /** Renames records (a name another entry now holds is freed first: docs/directory-sync.md). */
  async rename(renames: Array<{ id: string; username: string }>, now: number): Promise<void> {
    for (const r of renames)
      await db('users').where({ id: r.id }).update({ username: r.username, username_key: r.username.toLowerCase(), updated_at: now });
  },

  /** Reset links of users whose email changed die with the old address (docs/decisions.md "Reset links and the admin's remedies"). */
  async discardResets(userIds: string[]): Promise<void> {
    if (userIds.length > 0) await db('password_reset_tokens').whereIn('user_id', userIds).delete();
  },

  /** `emails` become verified addresses of a backend's users: the upstreams' accounts holding them keep them unverified (docs/decisions.md "Upstream emails"). */
  async demoteClaimedEmails(emails: string[], upstreams: readonly string[]): Promise<void> {
    if (emails.length === 0 || upstreams.length === 0) return;
    await db('users')
      .whereRaw(
        `lower(email) in (${emails.map(() => '?').join(', ')})`,
        emails.map((e) => e.toLowerCase()),
      )
      .whereIn('backend', [...upstreams])
      .andWhere('email_verified', true)
      .update({ email_verified: false });
  },

  /**
   * Takes the lease of `backend` until `until` if nobody holds it (or `holder` does already) and, with
   * `dueBefore`, the last pass started before then: one atomic upsert, so of several processes asking
   * at once exactly one gets it, and a pass just made by another is not made again.
   */
  async takeLease(backend: string, holder: string, now: number, until: number, dueBefore?: number): Promise<boolean> {
    const rows = (await db('directory_syncs')
      .insert({ backend, lease_holder: holder, lease_until: until })
      .onConflict('backend')
      .merge(['lease_holder', 'lease_until'])
      .where((free) =>
        free
          .whereNull('directory_syncs.lease_until')
          .orWhere('directory_syncs.lease_until', '<=', now)
          .orWhere('directory_syncs.lease_holder', holder),
      )
      .andWhere((due) =>
        dueBefore === undefined ? due : due.whereNull('directory_syncs.last_at').orWhere('directory_syncs.last_at', '<=', dueBefore),
      )
      .returning('backend')) as unknown[];
    return rows.length > 0;
  },

  /** Extends a lease `holder` still holds; false when it has lost it. */
  async renewLease(backend: string, holder: string, until: number): Promise<boolean> {
    return (await db('directory_syncs').where({ backend, lease_holder: holder }).update({ lease_until: until })) > 0;
  },

  /** Who holds the lease of `backend` now, and until when; undefined when nobody does. */
  async leaseOf(backend: string, now: number): Promise<{ holder: string; until: number } | undefined> {
    const row = await db('directory_syncs').where({ backend }).andWhere('lease_until', '>', now).first('lease_holder', 'lease_until');
    return row?.lease_holder ? { holder: String(row.lease_holder), until: num(row.lease_until) } : undefined;
  },

  /** Records a pass's outcome and lets the lease go, if `holder` still holds it. */
  async finish(
    backend: string,
    holder: string,
    pass: SyncCounts & { at: number; durationMs: number; outcome: SyncOutcome; error: string | null },
  ): Promise<boolean> {
    const changed = await db('directory_syncs')
      .where({ backend, lease_holder: holder })
      .update({
        lease_holder: null,
        lease_until: null,
        last_at: pass.at,
        ...(pass.outcome === 'applied' ? { last_success_at: pass.at } : {}),
        duration_ms: pass.durationMs,
        users: pass.users,
        created: pass.created,
        updated: pass.updated,
        deprovisioned: pass.deprovisioned,
        reenabled: pass.reenabled,
        error: pass.outcome === 'refused' ? `${REFUSED}${pass.error ?? ''}` : pass.error,
      });
    return changed > 0;
  },

  /** The last pass of every backend that had one. */
  async lastSyncs(): Promise<LastSync[]> {
    const rows: Array<Record<string, unknown>> = await db('directory_syncs').whereNotNull('last_at').select('*');
    return rows.map(toLastSync);
  },
});

export type SyncQueries = ReturnType<typeof syncQueries>;
