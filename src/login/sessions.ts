import type { Db } from '../db/connect.ts';
import { num } from '../db/rows.ts';
import { hashToken, randomToken } from '../crypto/tokens.ts';

export interface SsoSession {
  /** The stored id: a hash of the cookie value, so a database read gives no usable cookie. */
  id: string;
  userId: string;
  authTime: number;
  expiresAt: number;
}

/** Server-side SSO sessions; the browser holds only a random cookie value. */
export const sessionStore = (db: Db, ttlSeconds: number) => ({
  async create(userId: string): Promise<{ cookie: string; session: SsoSession }> {
    const cookie = randomToken();
    const now = Date.now();
    const session = { id: hashToken(cookie), userId, authTime: now, expiresAt: now + ttlSeconds * 1000 };
    await db('sso_sessions').insert({
      id_hash: session.id,
      user_id: userId,
      auth_time: now,
      expires_at: session.expiresAt,
      created_at: now,
    });
    return { cookie, session };
  },

  async find(cookie: string | undefined): Promise<SsoSession | undefined> {
    if (!cookie) return undefined;
    const row = await db('sso_sessions').where({ id_hash: hashToken(cookie) }).first();
    if (!row || num(row.expires_at) <= Date.now()) return undefined;
    return { id: String(row.id_hash), userId: String(row.user_id), authTime: num(row.auth_time), expiresAt: num(row.expires_at) };
  },

  async remove(id: string): Promise<void> {
    await db('sso_sessions').where({ id_hash: id }).delete();
  },
});

export type SessionStore = ReturnType<typeof sessionStore>;
