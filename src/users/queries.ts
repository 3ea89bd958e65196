import type { Database } from '../db/database.ts';
import { statement } from '../db/statements.ts';
import { likePattern, paginate, type Page, type PageRequest } from '../db/pagination.ts';
import { ping } from '../db/ping.ts';
import { rowCount } from '../db/row-counts.ts';
import { searchPage, type SearchedList } from '../db/text-search.ts';
import { bool, json, num } from '../db/rows.ts';
import type { DisabledBy, User } from './model.ts';

function toUser(r: Record<string, unknown>): User {
  return {
    id: String(r.id),
    backend: String(r.backend),
    externalId: String(r.external_id),
    username: String(r.username),
    email: (r.email as string | null) ?? null,
    emailVerified: r.email_verified == null ? true : bool(r.email_verified),
    displayName: (r.display_name as string | null) ?? null,
    passwordHash: (r.password_hash as string | null) ?? null,
    roles: json(r.roles, []),
    groups: json(r.groups, []),
    attributes: json(r.attributes, {}),
    disabled: bool(r.disabled),
    disabledBy: (r.disabled_by as DisabledBy | null) ?? null,
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
  };
}

const USER_COLUMNS = [
  'id',
  'backend',
  'external_id',
  'username',
  'email',
  'email_verified',
  'display_name',
  'password_hash',
  'roles',
  'groups',
  'attributes',
  'disabled',
  'disabled_by',
  'created_at',
  'updated_at',
] as const;

/**
 * A user joined to another read (a code, a refresh token): their columns under `u_` names, so the
 * token endpoint reads the grant and its user in one round trip instead of two.
 */
export const joinedUserColumns = (alias: string): string => USER_COLUMNS.map((c) => `${alias}.${c} as u_${c}`).join(', ');

/** The user of a row read with joinedUserColumns; undefined when there is none (deleted). */
export function joinedUser(r: Record<string, unknown>): User | undefined {
  if (r.u_id == null) return undefined;
  return toUser(Object.fromEntries(USER_COLUMNS.map((c) => [c, r[`u_${c}`]])));
}

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
    // null, not {}, for none: most users have none, and null costs nothing to read back.
    attributes: Object.keys(u.attributes).length > 0 ? JSON.stringify(u.attributes) : null,
    disabled: u.disabled,
    disabled_by: u.disabled ? (u.disabledBy ?? 'admin') : null,
    created_at: u.createdAt,
    updated_at: u.updatedAt,
  };
}

const sql = {
  find: statement('select * from users where id = ?'),
  findByUsername: statement('select * from users where backend = ? and username_key = ?'),
  findByExternalId: statement('select * from users where backend = ? and external_id = ?'),
};

/** The users list: creation order, searched through its trigram index (src/db/text-search.ts). */
const USER_ORDER: SearchedList = { table: 'users', index: 'users_search', timeColumn: 'created_at', keyColumn: 'id' };

export const userQueries = ({ knex: db, fast }: Database) => ({
  /**
   * A user. `lock` (inside a write's transaction) holds the row until the commit, as SCIM's `findUser`
   * does (`select … for update` on PostgreSQL; SQLite runs one transaction at a time): a change that
   * writes the whole row back then reads what a sync pass, a leaver's deprovisioning or a SCIM write
   * committed meanwhile, and does not put the old row back.
   */
  async find(id: string, o: { lock?: boolean } = {}): Promise<User | undefined> {
    const row = o.lock ? await db('users').where({ id }).first().forUpdate() : await fast.get(sql.find, [id]);
    return row ? toUser(row) : undefined;
  },
  async findByUsername(backend: string, username: string): Promise<User | undefined> {
    const row = await fast.get(sql.findByUsername, [backend, username.toLowerCase()]);
    return row ? toUser(row) : undefined;
  },
  async findByExternalId(backend: string, externalId: string): Promise<User | undefined> {
    // Every sign-in through a directory reads it (provisioning): a prepared statement, not a built query.
    const row = await fast.get(sql.findByExternalId, [backend, externalId]);
    return row ? toUser(row) : undefined;
  },
  /** Whether an account other than `exceptId` holds `email` as verified (compared without case). */
  async holdsVerifiedEmail(email: string, exceptId: string): Promise<boolean> {
    const row = await db('users')
      .whereRaw('lower(email) = ?', [email.toLowerCase()])
      .andWhere('email_verified', true)
      .andWhereNot('id', exceptId)
      .first('id');
    return row !== undefined;
  },
  /**
   * `email` becomes a verified address of `exceptId`: the upstream accounts (`upstreams`, their
   * backends) that held it verified keep it unverified from now on (docs/decisions.md "Upstream emails").
   */
  async demoteClaimedEmail(email: string, exceptId: string, upstreams: readonly string[]): Promise<void> {
    if (upstreams.length === 0) return;
    await db('users')
      .whereRaw('lower(email) = ?', [email.toLowerCase()])
      .whereIn('backend', [...upstreams])
      .andWhere('email_verified', true)
      .andWhereNot('id', exceptId)
      .update({ email_verified: false });
  },
  async insert(user: User): Promise<void> {
    await db('users').insert(toRow(user));
  },
  async update(user: User): Promise<void> {
    const { id, created_at, ...rest } = toRow(user);
    await db('users').where({ id }).update(rest);
  },
  /**
   * What a backend reports of `id` at a sign-in, and nothing else: roles and attributes only when
   * given (the backend reports them), never the account state or the password. A whole row written
   * back from a read made before the sign-in would undo an administrator's change committed meanwhile
   * (a disabling, roles); the columns written here are the backend's, so its answer is the newest.
   */
  async updateProfile(
    id: string,
    p: Pick<User, 'username' | 'email' | 'emailVerified' | 'displayName' | 'groups' | 'updatedAt'> &
      Partial<Pick<User, 'roles' | 'attributes'>>,
  ): Promise<void> {
    await db('users')
      .where({ id })
      .update({
        username: p.username,
        username_key: p.username.toLowerCase(),
        email: p.email,
        email_verified: p.emailVerified,
        display_name: p.displayName,
        groups: JSON.stringify(p.groups),
        ...(p.roles ? { roles: JSON.stringify(p.roles) } : {}),
        ...(p.attributes ? { attributes: Object.keys(p.attributes).length > 0 ? JSON.stringify(p.attributes) : null } : {}),
        updated_at: p.updatedAt,
      });
  },
  /** `id` takes another name (a directory gave its name to a new entry), and nothing else changes. */
  async rename(id: string, username: string, updatedAt: number): Promise<void> {
    await db('users').where({ id }).update({ username, username_key: username.toLowerCase(), updated_at: updatedAt });
  },
  /**
   * Moves the account state of `id` from `from` to `to`, and writes nothing else: false when the row no
   * longer holds `from` (another write came first). A leaver's or returner's whole row written back
   * from a read would undo what an administrator changed meanwhile (a disabling of their own, roles);
   * PostgreSQL checks the `where` again on the row as a write it waited for left it.
   */
  async moveState(
    id: string,
    from: { disabled: boolean; disabledBy?: DisabledBy },
    to: { disabled: boolean; disabledBy: DisabledBy | null; updatedAt: number },
  ): Promise<boolean> {
    const q = db('users').where({ id, disabled: from.disabled });
    if (from.disabledBy !== undefined) q.andWhere('disabled_by', from.disabledBy);
    return (await q.update({ disabled: to.disabled, disabled_by: to.disabledBy, updated_at: to.updatedAt })) > 0;
  },
  async remove(id: string): Promise<boolean> {
    return (await db('users').where({ id }).delete()) > 0;
  },
  /** A page of users in creation order, optionally those whose name, email or display name contains `search`. */
  async page(req: PageRequest & { search?: string | null }): Promise<Page<User>> {
    const q = db('users').select('*');
    if (!req.search) return paginate(q, { ...req, ...USER_ORDER, direction: 'asc', total: () => rowCount(db, 'users') }, toUser);
    const like = likePattern(req.search);
    q.where((w) =>
      w
        .whereRaw("username_key like ? escape '\\'", [like])
        .orWhereRaw("lower(email) like ? escape '\\'", [like])
        .orWhereRaw("lower(display_name) like ? escape '\\'", [like]),
    );
    return searchPage(db, USER_ORDER, req.search, q, { ...req, countIsTotal: true }, toUser);
  },
  /**
   * Every distinct set of groups the users' records hold, with how many users hold it: the groups
   * Latchkey knows (docs/access-and-claims.md), counted without a JSON function either database lacks.
   */
  async groupSets(): Promise<Array<{ groups: string[]; users: number }>> {
    const rows: Array<{ groups: unknown; n: unknown }> = await db('users')
      .select('groups')
      .count({ n: '*' })
      .whereNot('groups', '[]')
      .groupBy('groups');
    return rows.map((r) => ({ groups: json<string[]>(r.groups, []), users: Number(r.n) }));
  },
  /** Whether the database answers (the database backend's health). */
  ping: () => ping(db),
  async anyWithRole(role: string): Promise<boolean> {
    // Roles are a short JSON list; a LIKE on the quoted name is exact enough and portable.
    const row = await db('users')
      .where('roles', 'like', `%${JSON.stringify(role)}%`)
      .first('id');
    return row !== undefined;
  },
});

export type UserQueries = ReturnType<typeof userQueries>;
