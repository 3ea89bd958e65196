import type { Db } from '../db/connect.ts';
import { num, numOrNull } from '../db/rows.ts';

export interface CodeRow {
  codeHash: string;
  clientId: string;
  userId: string;
  sessionId: string | null;
  redirectUri: string;
  scope: string;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  authTime: number;
  expiresAt: number;
}

export interface RefreshRow {
  tokenHash: string;
  familyId: string;
  clientId: string;
  userId: string;
  scope: string;
  sessionId: string | null;
  codeHash: string | null;
  authTime: number | null;
  expiresAt: number;
  rotatedAt: number | null;
  revokedAt: number | null;
}

const toCode = (r: Record<string, unknown>): CodeRow => ({
  codeHash: String(r.code_hash),
  clientId: String(r.client_id),
  userId: String(r.user_id),
  sessionId: (r.session_id as string | null) ?? null,
  redirectUri: String(r.redirect_uri),
  scope: String(r.scope),
  nonce: (r.nonce as string | null) ?? null,
  codeChallenge: (r.code_challenge as string | null) ?? null,
  codeChallengeMethod: (r.code_challenge_method as string | null) ?? null,
  authTime: num(r.auth_time),
  expiresAt: num(r.expires_at),
});

const toRefresh = (r: Record<string, unknown>): RefreshRow => ({
  tokenHash: String(r.token_hash),
  familyId: String(r.family_id),
  clientId: String(r.client_id),
  userId: String(r.user_id),
  scope: String(r.scope),
  sessionId: (r.session_id as string | null) ?? null,
  codeHash: (r.code_hash as string | null) ?? null,
  authTime: numOrNull(r.auth_time),
  expiresAt: num(r.expires_at),
  rotatedAt: numOrNull(r.rotated_at),
  revokedAt: numOrNull(r.revoked_at),
});

export interface NewAccessToken {
  token_hash: string;
  client_id: string;
  user_id: string | null;
  scope: string;
  family_id: string | null;
  code_hash: string | null;
  session_id: string | null;
  expires_at: number;
  created_at: number;
}

export type NewRefreshToken = Omit<NewAccessToken, 'user_id' | 'family_id'> & {
  user_id: string;
  family_id: string;
  auth_time: number | null;
};

export const tokenQueries = (db: Db) => ({
  async insertCode(row: Record<string, unknown>): Promise<void> {
    await db('auth_codes').insert(row);
  },

  /**
   * Marks a code used, atomically: of two concurrent redemptions only one gets the row. Returns the
   * row and whether this call was the one that consumed it.
   */
  async consumeCode(codeHash: string, now: number): Promise<{ row: CodeRow; fresh: boolean } | undefined> {
    const updated = await db('auth_codes').where({ code_hash: codeHash }).whereNull('consumed_at').update({ consumed_at: now });
    const row = await db('auth_codes').where({ code_hash: codeHash }).first();
    return row ? { row: toCode(row), fresh: updated === 1 } : undefined;
  },

  async insertTokens(access: NewAccessToken, refresh?: NewRefreshToken): Promise<void> {
    if (!refresh) {
      await db('access_tokens').insert(access);
      return;
    }
    await db.transaction(async (trx) => {
      await trx('access_tokens').insert(access);
      await trx('refresh_tokens').insert(refresh);
    });
  },

  async findRefresh(tokenHash: string): Promise<RefreshRow | undefined> {
    const row = await db('refresh_tokens').where({ token_hash: tokenHash }).first();
    return row ? toRefresh(row) : undefined;
  },

  /** Marks a refresh token rotated; false when another request rotated (or revoked) it first. */
  async markRotated(tokenHash: string, now: number): Promise<boolean> {
    const n = await db('refresh_tokens')
      .where({ token_hash: tokenHash })
      .whereNull('rotated_at')
      .whereNull('revoked_at')
      .update({ rotated_at: now });
    return n === 1;
  },

  /** The access token with what `/me` needs of its user and client, in one indexed read. */
  async findAccess(tokenHash: string) {
    return db('access_tokens as a')
      .join('clients as c', 'c.client_id', 'a.client_id')
      .leftJoin('users as u', 'u.id', 'a.user_id')
      .where('a.token_hash', tokenHash)
      .first(
        'a.client_id',
        'a.user_id',
        'a.scope',
        'a.expires_at',
        'a.created_at',
        'c.oauth_enabled',
        'c.roles as client_roles',
        'u.username',
        'u.email',
        'u.display_name',
        'u.groups',
        'u.roles',
        'u.backend',
        'u.disabled',
      );
  },

  /** Revokes by a column of both token tables (family, code, session, user, client). */
  async revokeWhere(where: Record<string, string>, now: number): Promise<number> {
    return db.transaction(async (trx) => {
      const a = await trx('access_tokens').where(where).delete();
      const r = await trx('refresh_tokens').where(where).whereNull('revoked_at').update({ revoked_at: now });
      return a + r;
    });
  },
});

export type TokenQueries = ReturnType<typeof tokenQueries>;
