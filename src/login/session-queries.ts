import type { Database } from '../db/database.ts';
import { statement } from '../db/statements.ts';
import { json, num, numOrNull } from '../db/rows.ts';
import type { Amr, SsoSession } from './model.ts';

/**
 * RFC 8176 authentication method references, as a session stores them and the id_token's `amr`
 * carries them. Declared with the stored session, the lowest place that needs it.
 */

const sql = {
  insert: statement('insert into sso_sessions (id_hash, user_id, auth_time, amr, expires_at, created_at) values (?, ?, ?, ?, ?, ?)'),
  find: statement('select * from sso_sessions where id_hash = ?'),
};

export const sessionQueries = ({ knex: db, fast }: Database) => ({
  async insert(s: SsoSession, now: number): Promise<void> {
    await fast.groupCommit([{ stmt: sql.insert, params: [s.id, s.userId, s.authTime, JSON.stringify(s.amr), s.expiresAt, now] }]);
  },
  async find(id: string): Promise<SsoSession | undefined> {
    const row = await fast.get(sql.find, [id]);
    return row
      ? {
          id: String(row.id_hash),
          userId: String(row.user_id),
          authTime: num(row.auth_time),
          amr: row.amr == null ? ['pwd'] : json<Amr[]>(row.amr, ['pwd']),
          provedAt: numOrNull(row.proved_at),
          expiresAt: num(row.expires_at),
        }
      : undefined;
  },
  /** A second factor used later in the session (step-up): the session now carries it, proved now. */
  async setAmr(id: string, amr: Amr[], now: number): Promise<void> {
    await db('sso_sessions')
      .where({ id_hash: id })
      .update({ amr: JSON.stringify(amr), proved_at: now });
  },
  /** The password or a factor asked again and given. */
  async setProvedAt(id: string, now: number): Promise<void> {
    await db('sso_sessions').where({ id_hash: id }).update({ proved_at: now });
  },
  async remove(id: string): Promise<number> {
    return db('sso_sessions').where({ id_hash: id }).delete();
  },
  /** Every session of a user but `except`; how many there were. */
  async removeAllOf(userId: string, except?: string): Promise<number> {
    const q = db('sso_sessions').where({ user_id: userId });
    return (except ? q.whereNot({ id_hash: except }) : q).delete();
  },

  /** A pending sign-in (a right password before its second step); the expired ones left behind go now. */
  /** Expired rows are left to the retention purge. */
  async insertPending(id: string, userId: string, expiresAt: number): Promise<void> {
    await db('pending_sign_ins').insert({ id, user_id: userId, expires_at: expiresAt });
  },
  /** Takes a pending sign-in, in one statement: of any number of requests carrying it, one gets it. */
  async takePending(id: string, now: number): Promise<boolean> {
    return (await db('pending_sign_ins').where({ id }).andWhere('expires_at', '>', now).delete()) > 0;
  },
  async removePendingOf(userId: string): Promise<number> {
    return db('pending_sign_ins').where({ user_id: userId }).delete();
  },
});

export type SessionQueries = ReturnType<typeof sessionQueries>;
