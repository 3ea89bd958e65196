import type { Db } from '../db/connect.ts';
import { num } from '../db/rows.ts';

export interface SsoSession {
  /** The stored id: a hash of the cookie value, so a database read gives no usable cookie. */
  id: string;
  userId: string;
  authTime: number;
  expiresAt: number;
}

export const sessionQueries = (db: Db) => ({
  async insert(s: SsoSession, now: number): Promise<void> {
    await db('sso_sessions').insert({ id_hash: s.id, user_id: s.userId, auth_time: s.authTime, expires_at: s.expiresAt, created_at: now });
  },
  async find(id: string): Promise<SsoSession | undefined> {
    const row = await db('sso_sessions').where({ id_hash: id }).first();
    return row ? { id: String(row.id_hash), userId: String(row.user_id), authTime: num(row.auth_time), expiresAt: num(row.expires_at) } : undefined;
  },
  async remove(id: string): Promise<void> {
    await db('sso_sessions').where({ id_hash: id }).delete();
  },
});

export type SessionQueries = ReturnType<typeof sessionQueries>;
