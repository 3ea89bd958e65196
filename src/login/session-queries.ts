import type { Db } from '../db/connect.ts';
import { fastOf, statement } from '../db/fast.ts';
import { num } from '../db/rows.ts';

export interface SsoSession {
  /** The stored id: a hash of the cookie value, so a database read gives no usable cookie. */
  id: string;
  userId: string;
  authTime: number;
  expiresAt: number;
}

const sql = {
  insert: statement('insert into sso_sessions (id_hash, user_id, auth_time, expires_at, created_at) values (?, ?, ?, ?, ?)'),
  find: statement('select * from sso_sessions where id_hash = ?'),
};

export const sessionQueries = (db: Db) => ({
  async insert(s: SsoSession, now: number): Promise<void> {
    await fastOf(db).commit([{ stmt: sql.insert, params: [s.id, s.userId, s.authTime, s.expiresAt, now] }]);
  },
  async find(id: string): Promise<SsoSession | undefined> {
    const row = await fastOf(db).get(sql.find, [id]);
    return row ? { id: String(row.id_hash), userId: String(row.user_id), authTime: num(row.auth_time), expiresAt: num(row.expires_at) } : undefined;
  },
  async remove(id: string): Promise<void> {
    await db('sso_sessions').where({ id_hash: id }).delete();
  },
});

export type SessionQueries = ReturnType<typeof sessionQueries>;
