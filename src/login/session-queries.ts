import type { Db } from '../db/connect.ts';
import { fastOf, statement } from '../db/fast.ts';
import { json, num } from '../db/rows.ts';
import type { Amr } from '../mfa/service.ts';

export interface SsoSession {
  /** The stored id: a hash of the cookie value, so a database read gives no usable cookie. */
  id: string;
  userId: string;
  authTime: number;
  /** The factors the sign-in used (RFC 8176); sessions from before they were kept used a password. */
  amr: Amr[];
  expiresAt: number;
}

const sql = {
  insert: statement('insert into sso_sessions (id_hash, user_id, auth_time, amr, expires_at, created_at) values (?, ?, ?, ?, ?, ?)'),
  find: statement('select * from sso_sessions where id_hash = ?'),
};

export const sessionQueries = (db: Db) => ({
  async insert(s: SsoSession, now: number): Promise<void> {
    await fastOf(db).commit([{ stmt: sql.insert, params: [s.id, s.userId, s.authTime, JSON.stringify(s.amr), s.expiresAt, now] }]);
  },
  async find(id: string): Promise<SsoSession | undefined> {
    const row = await fastOf(db).get(sql.find, [id]);
    return row
      ? { id: String(row.id_hash), userId: String(row.user_id), authTime: num(row.auth_time), amr: row.amr == null ? ['pwd'] : json<Amr[]>(row.amr, ['pwd']), expiresAt: num(row.expires_at) }
      : undefined;
  },
  /** A second factor used later in the session (step-up): the session now carries it. */
  async setAmr(id: string, amr: Amr[]): Promise<void> {
    await db('sso_sessions').where({ id_hash: id }).update({ amr: JSON.stringify(amr) });
  },
  async remove(id: string): Promise<void> {
    await db('sso_sessions').where({ id_hash: id }).delete();
  },
  /** Every session of a user ("sign out everywhere"); how many there were. */
  async removeAllOf(userId: string): Promise<number> {
    return db('sso_sessions').where({ user_id: userId }).delete();
  },
});

export type SessionQueries = ReturnType<typeof sessionQueries>;
