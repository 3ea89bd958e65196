/**
 * The SQL of the SCIM service provider (docs/scim-provisioning.md "What the endpoint supports"):
 * the SCIM view of a backend's users (`users.scim`, the document a client wrote; null for a record
 * SCIM no longer shows), the SCIM groups and their members. The users' own columns are written
 * through the user queries (src/users/queries.ts); only `scim` and `groups` are written here.
 */
import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { bool, json, num } from '../db/rows.ts';
import type { ScimDocument, ScimGroup, ScimMembership, ScimUserRecord, SqlNarrowing } from './model.ts';

type Row = Record<string, unknown>;

/** An invitation waiting in `scim_invitations`: whom, and the request that created them (for its audit event). */
export interface QueuedInvitation {
  userId: string;
  origin: { requestId?: string; ip?: string };
}

const CHUNK = 500;
const chunks = <T>(list: readonly T[]): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += CHUNK) out.push(list.slice(i, i + CHUNK));
  return out;
};

const toUserRecord = (r: Row): ScimUserRecord => ({
  id: String(r.id),
  backend: String(r.backend),
  userName: String(r.username),
  disabled: bool(r.disabled),
  document: json<ScimDocument>(r.scim, {}),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

const toGroup = (r: Row): ScimGroup => ({
  id: String(r.id),
  backend: String(r.backend),
  displayName: String(r.display_name),
  externalId: (r.external_id as string | null) ?? null,
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

/** How much of a userName a retired record keeps before `~<id>` (255 characters in all, an id of 36). */
export const RETIRED_PREFIX = 255 - 36 - 1;

const USER_COLUMNS = ['id', 'backend', 'username', 'disabled', 'scim', 'created_at', 'updated_at'];

/** `updated_at` moves strictly forward on every write: the ETag (`meta.version`) is made from it. */
const later = (db: Database['knex'], now: number) => db.raw('case when updated_at >= ? then updated_at + 1 else ? end', [now, now]);

export const scimQueries = ({ knex: db }: Database) => {
  /**
   * The rows of `q` whose id is among `ids`. On PostgreSQL they are locked in id order by one
   * statement, whatever their number (one array parameter); SQLite has no row locks to order.
   */
  async function lockedAmong(q: Knex.QueryBuilder, ids: readonly string[], columns: Array<string | Knex.Raw>): Promise<Row[]> {
    if (ids.length === 0) return [];
    if (db.client.config.client !== 'pg') {
      return (await Promise.all(chunks([...new Set(ids)]).map((part) => q.clone().whereIn('id', part).select(columns)))).flat();
    }
    return q
      .whereRaw('id = any(?)', [[...new Set(ids)]])
      .orderBy('id')
      .forUpdate()
      .select(columns);
  }

  async function groupIdsOf(userId: string): Promise<string[]> {
    const rows: Row[] = await db('scim_group_members').where({ user_id: userId }).select('group_id');
    return rows.map((r) => String(r.group_id));
  }

  const scimUsers = (backend: string) => db('users').where({ backend }).whereNotNull('scim');

  function narrowUsers(q: ReturnType<typeof scimUsers>, n?: SqlNarrowing) {
    if (!n) return q;
    switch (n.column) {
      case 'id':
        return q.where('id', n.value);
      case 'username':
        return q.where('username_key', n.value.toLowerCase());
      case 'externalId':
        // A record without a SCIM externalId keeps its own id there (src/scim/user-create.ts, user-update.ts).
        return q.where('external_id', n.value).whereRaw('external_id <> id');
      case 'displayName':
        return q.whereRaw('lower(display_name) = ?', [n.value.toLowerCase()]);
    }
  }

  const groupsOf = (backend: string) => db('scim_groups').where({ backend });

  function narrowGroups(q: ReturnType<typeof groupsOf>, n?: SqlNarrowing) {
    if (!n) return q;
    switch (n.column) {
      case 'id':
        return q.where('id', n.value);
      case 'displayName':
        return q.where('display_name_key', n.value.toLowerCase());
      case 'externalId':
        return q.where('external_id', n.value);
      case 'username':
        return q.whereRaw('1 = 0');
    }
  }

  return {
    /**
     * A SCIM user of the backend. `lock` (inside a write's transaction) holds the row until the commit
     * (`select … for update` on PostgreSQL; SQLite runs one transaction at a time), so two writes of one
     * user run one after the other and the second reads what the first wrote.
     */
    async findUser(backend: string, id: string, o: { lock?: boolean } = {}): Promise<ScimUserRecord | undefined> {
      const q = scimUsers(backend).where({ id }).first(USER_COLUMNS);
      const row = await (o.lock ? q.forUpdate() : q);
      return row ? toUserRecord(row) : undefined;
    },

    /**
     * The write of a user goes ahead only on the version it read: `updated_at` moves from `seen` to
     * `next`, and false (nothing written) when another write changed the row meanwhile.
     */
    async moveVersion(id: string, seen: number, next: number): Promise<boolean> {
      return (await db('users').where({ id, updated_at: seen }).update({ updated_at: next })) > 0;
    },

    /** Whether a user of a backend other than `backend` holds the name (without case): names are kept apart across backends. */
    async nameHeldElsewhere(backend: string, username: string): Promise<boolean> {
      const row = await db('users').where('username_key', username.toLowerCase()).whereNot({ backend }).first('id');
      return row !== undefined;
    },

    /**
     * The newest record of the backend that SCIM retired under the name (a DELETE renames it
     * `<userName>~<id>`, src/scim/user-delete.ts): its id, or undefined.
     */
    async retiredUser(backend: string, username: string): Promise<string | undefined> {
      const prefix = username.slice(0, RETIRED_PREFIX).toLowerCase();
      const rows: Row[] = await db('users')
        .where({ backend })
        .whereNull('scim')
        .whereRaw("username_key like ? escape '\\'", [`${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}~%`])
        .orderBy('created_at', 'desc')
        .select('id', 'username_key');
      return rows.map((r) => String(r.id)).find((id, i) => rows[i]!.username_key === `${prefix}~${id.toLowerCase()}`);
    },

    /** Whether a record of the backend other than `id` holds the userName (without case) or the externalId: after a failed write, was it a race? */
    async holder(backend: string, id: string, username: string, externalId: string | null): Promise<'userName' | 'externalId' | undefined> {
      const byName = await db('users').where({ backend, username_key: username.toLowerCase() }).whereNot({ id }).first('id');
      if (byName) return 'userName';
      if (externalId === null) return undefined;
      const byExternal = await db('users').where({ backend, external_id: externalId }).whereNot({ id }).first('id');
      return byExternal ? 'externalId' : undefined;
    },

    /** The stored document of a user; null takes the record out of SCIM's view (a DELETE). */
    async setDocument(id: string, document: ScimDocument | null): Promise<void> {
      await db('users')
        .where({ id })
        .update({ scim: document === null ? null : JSON.stringify(document) });
    },

    async countUsers(backend: string, n?: SqlNarrowing): Promise<number> {
      const row = await narrowUsers(scimUsers(backend), n).count({ n: '*' }).first();
      return num(row?.n);
    },

    /** The backend's SCIM users in creation order, `offset` and `limit` as given; every one without a limit. */
    async users(backend: string, o: { narrowing?: SqlNarrowing; offset?: number; limit?: number } = {}): Promise<ScimUserRecord[]> {
      const q = narrowUsers(scimUsers(backend), o.narrowing)
        .select(USER_COLUMNS)
        .orderBy([{ column: 'created_at' }, { column: 'id' }]);
      if (o.limit !== undefined) q.limit(o.limit);
      if (o.offset) q.offset(o.offset);
      return (await q).map(toUserRecord);
    },

    /** The SCIM groups the users are members of (a user's `groups`); every membership of the backend without `userIds`. */
    async membershipsOfUsers(backend: string, userIds?: readonly string[]): Promise<ScimMembership[]> {
      const read = (part?: string[]) => {
        const q = db('scim_group_members as m')
          .join('scim_groups as g', 'g.id', 'm.group_id')
          .where('g.backend', backend)
          .select('m.group_id', 'm.user_id', 'g.display_name');
        if (part) q.whereIn('m.user_id', part);
        return q;
      };
      const rows: Row[] = userIds ? (await Promise.all(chunks(userIds).map((p) => read(p)))).flat() : await read();
      return rows.map((r) => ({ groupId: String(r.group_id), userId: String(r.user_id), groupName: String(r.display_name) }));
    },

    /** The members of the groups (a group's `members`), with the members' names. */
    async membersOfGroups(
      groupIds: readonly string[],
    ): Promise<Array<{ groupId: string; userId: string; userName: string; displayName: string | null }>> {
      const out = [];
      for (const part of chunks(groupIds)) {
        const rows: Row[] = await db('scim_group_members as m')
          .join('users as u', 'u.id', 'm.user_id')
          .whereIn('m.group_id', part)
          .select('m.group_id', 'm.user_id', 'u.username', 'u.display_name')
          .orderBy([{ column: 'm.group_id' }, { column: 'u.username_key' }]);
        for (const r of rows) {
          out.push({
            groupId: String(r.group_id),
            userId: String(r.user_id),
            userName: String(r.username),
            displayName: (r.display_name as string | null) ?? null,
          });
        }
      }
      return out;
    },

    /** A user's `groups` column: the names of their SCIM groups, what access policies read. */
    async setUserGroups(userId: string, groups: readonly string[], now: number): Promise<void> {
      await db('users')
        .where({ id: userId })
        .update({ groups: JSON.stringify(groups), updated_at: later(db, now) });
    },

    /** A SCIM group of the backend; `lock` holds its row until the commit, as `findUser` does a user's. */
    async findGroup(backend: string, id: string, o: { lock?: boolean } = {}): Promise<ScimGroup | undefined> {
      const q = groupsOf(backend).where({ id }).first();
      const row = await (o.lock ? q.forUpdate() : q);
      return row ? toGroup(row) : undefined;
    },

    /**
     * Holds the groups' rows until the commit. Every SCIM write that touches both takes its groups
     * first, then its users, each set in id order in one statement: two writes never wait for each
     * other in a circle (PostgreSQL's deadlock, 40P01). SQLite runs one write transaction at a time.
     */
    async lockGroups(ids: readonly string[]): Promise<void> {
      await lockedAmong(db('scim_groups'), ids, ['id']);
    },

    /**
     * Holds the rows of the backend's users among `ids` until the commit (after the groups, see
     * `lockGroups`): the ids of those SCIM shows, which stay so until then (a DELETE waits).
     */
    async lockUsers(backend: string, ids: readonly string[]): Promise<Set<string>> {
      const rows = await lockedAmong(db('users').where({ backend }), ids, ['id', db.raw('scim is not null as live')]);
      return new Set(rows.filter((r) => bool(r.live)).map((r) => String(r.id)));
    },

    /** The ids of the SCIM groups a user is a member of. */
    groupIdsOf,

    async findGroupByName(backend: string, displayName: string): Promise<ScimGroup | undefined> {
      const row = await groupsOf(backend).where({ display_name_key: displayName.toLowerCase() }).first();
      return row ? toGroup(row) : undefined;
    },

    async countGroups(backend: string, n?: SqlNarrowing): Promise<number> {
      const row = await narrowGroups(groupsOf(backend), n).count({ n: '*' }).first();
      return num(row?.n);
    },

    async groups(backend: string, o: { narrowing?: SqlNarrowing; offset?: number; limit?: number } = {}): Promise<ScimGroup[]> {
      const q = narrowGroups(groupsOf(backend), o.narrowing)
        .select('*')
        .orderBy([{ column: 'created_at' }, { column: 'id' }]);
      if (o.limit !== undefined) q.limit(o.limit);
      if (o.offset) q.offset(o.offset);
      return (await q).map(toGroup);
    },

    async insertGroup(g: ScimGroup): Promise<void> {
      await db('scim_groups').insert({
        id: g.id,
        backend: g.backend,
        display_name: g.displayName,
        display_name_key: g.displayName.toLowerCase(),
        external_id: g.externalId,
        created_at: g.createdAt,
        updated_at: g.updatedAt,
      });
    },

    async updateGroup(g: ScimGroup): Promise<void> {
      await db('scim_groups').where({ id: g.id }).update({
        display_name: g.displayName,
        display_name_key: g.displayName.toLowerCase(),
        external_id: g.externalId,
        updated_at: g.updatedAt,
      });
    },

    async deleteGroup(id: string): Promise<void> {
      await db('scim_groups').where({ id }).delete();
    },

    async memberIds(groupId: string): Promise<string[]> {
      const rows: Row[] = await db('scim_group_members').where({ group_id: groupId }).select('user_id');
      return rows.map((r) => String(r.user_id));
    },

    async addMembers(groupId: string, userIds: readonly string[]): Promise<void> {
      // A member another request added meanwhile is a member all the same.
      for (const part of chunks(userIds)) {
        await db('scim_group_members')
          .insert(part.map((user_id) => ({ group_id: groupId, user_id })))
          .onConflict(['group_id', 'user_id'])
          .ignore();
      }
    },

    async removeMembers(groupId: string, userIds: readonly string[]): Promise<void> {
      for (const part of chunks(userIds)) await db('scim_group_members').where({ group_id: groupId }).whereIn('user_id', part).delete();
    },

    /** How many members the groups have in all: what reading all their members would read. */
    async countMembersOfGroups(groupIds: readonly string[]): Promise<number> {
      let n = 0;
      for (const part of chunks(groupIds)) {
        const row = await db('scim_group_members').whereIn('group_id', part).count({ n: '*' }).first();
        n += num(row?.n);
      }
      return n;
    },

    /** An invitation to mail, written with the user it invites (docs/scim-provisioning.md "How SCIM users sign in"). */
    async queueInvitation(userId: string, origin: { requestId?: string | null; ip?: string | null }, now: number): Promise<void> {
      await db('scim_invitations')
        .insert({ user_id: userId, request_id: origin.requestId ?? null, ip: origin.ip ?? null, created_at: now, leased_until: null })
        .onConflict('user_id')
        .ignore();
    },

    /**
     * The oldest invitation no process is mailing (none leased, or its lease ran out), leased to this
     * one until `now + leaseMs`; undefined when there is none. Two processes never take the same one:
     * the lease is taken by a conditional update.
     */
    async leaseInvitation(now: number, leaseMs: number): Promise<QueuedInvitation | undefined> {
      const free = (q: Knex.QueryBuilder) => q.where((w) => w.whereNull('leased_until').orWhere('leased_until', '<', now));
      for (let attempt = 0; attempt < 5; attempt++) {
        const row = await free(db('scim_invitations'))
          .orderBy([{ column: 'created_at' }, { column: 'user_id' }])
          .first();
        if (!row) return undefined;
        const taken = await free(db('scim_invitations').where({ user_id: row.user_id })).update({ leased_until: now + leaseMs });
        if (taken > 0) {
          return {
            userId: String(row.user_id),
            origin: { requestId: (row.request_id as string | null) ?? undefined, ip: (row.ip as string | null) ?? undefined },
          };
        }
      }
      return undefined;
    },

    /** The invitation is done with (mailed, or nobody to invite any more). */
    async dropInvitation(userId: string): Promise<void> {
      await db('scim_invitations').where({ user_id: userId }).delete();
    },

    /** Gives a leased invitation back, for the next start or kick to take up. */
    async releaseInvitation(userId: string): Promise<void> {
      await db('scim_invitations').where({ user_id: userId }).update({ leased_until: null });
    },

    /** Takes a user out of every SCIM group (a DELETE); the groups' ids, whose lastModified moves. */
    async leaveAllGroups(userId: string, now: number): Promise<void> {
      const ids = await groupIdsOf(userId);
      await db('scim_group_members').where({ user_id: userId }).delete();
      for (const part of chunks(ids))
        await db('scim_groups')
          .whereIn('id', part)
          .update({ updated_at: later(db, now) });
    },
  };
};

export type ScimQueries = ReturnType<typeof scimQueries>;
