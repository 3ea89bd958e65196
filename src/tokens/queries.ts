import type { Db } from '../db/connect.ts';
import { bool, json, num, numOrNull } from '../db/rows.ts';

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

/** What new tokens are issued for, spent in the same transaction: a code (by hash) or a refresh token. */
export type Spend = { code: string } | { refresh: string };

/** An access token as the resources see it: its scope, its client, and its user (none for client_credentials). */
export interface AccessGrant {
  clientId: string;
  scopes: string[];
  expiresAt: number;
  createdAt: number;
  client: { oauthEnabled: boolean; roles: string[]; scopes: string[] };
  user: { id: string; username: string; email: string | null; displayName: string | null; groups: string[]; roles: string[]; disabled: boolean } | null;
}

const toAccessGrant = (r: Record<string, unknown>): AccessGrant => ({
  clientId: String(r.client_id),
  scopes: String(r.scope).split(' ').filter(Boolean),
  expiresAt: num(r.expires_at),
  createdAt: num(r.created_at),
  client: { oauthEnabled: bool(r.oauth_enabled), roles: json(r.client_roles, []), scopes: json(r.client_scopes, []) },
  // A user deleted since leaves no row to join: the token then has no user either.
  user:
    r.user_id != null && r.username != null
      ? {
          id: String(r.user_id),
          username: String(r.username),
          email: (r.email as string | null) ?? null,
          displayName: (r.display_name as string | null) ?? null,
          groups: json(r.groups, []),
          roles: json(r.roles, []),
          disabled: bool(r.disabled),
        }
      : null,
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

  async findCode(codeHash: string): Promise<{ row: CodeRow; consumed: boolean } | undefined> {
    const row = await db('auth_codes').where({ code_hash: codeHash }).first();
    return row ? { row: toCode(row), consumed: row.consumed_at != null } : undefined;
  },

  /** Marks a code used without issuing anything (a failed exchange still uses the code up). */
  async burnCode(codeHash: string, now: number): Promise<void> {
    await db('auth_codes').where({ code_hash: codeHash }).whereNull('consumed_at').update({ consumed_at: now });
  },

  /**
   * Inserts new tokens; with `spend`, in one transaction with spending what they are issued for (a
   * code, or the refresh token they replace). The spend comes first and takes the row's lock, so a
   * concurrent replay waits until these tokens are committed and then revokes them (SPEC 7). False,
   * with nothing written, when the code or token was already spent: a replay.
   */
  async insertTokens(access: NewAccessToken, refresh: NewRefreshToken | undefined, spend: Spend | undefined, now: number): Promise<boolean> {
    if (!refresh && !spend) {
      await db('access_tokens').insert(access);
      return true;
    }
    return db.transaction(async (trx) => {
      if (spend) {
        const spent =
          'code' in spend
            ? await trx('auth_codes').where({ code_hash: spend.code }).whereNull('consumed_at').update({ consumed_at: now })
            : await trx('refresh_tokens').where({ token_hash: spend.refresh }).whereNull('rotated_at').whereNull('revoked_at').update({ rotated_at: now });
        if (spent !== 1) return false;
      }
      await trx('access_tokens').insert(access);
      if (refresh) await trx('refresh_tokens').insert(refresh);
      return true;
    });
  },

  async findRefresh(tokenHash: string): Promise<RefreshRow | undefined> {
    const row = await db('refresh_tokens').where({ token_hash: tokenHash }).first();
    return row ? toRefresh(row) : undefined;
  },

  /** The access token with what `/me` needs of its user and client, in one indexed read. */
  async findAccess(tokenHash: string): Promise<AccessGrant | undefined> {
    const r = await db('access_tokens as a')
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
        'c.scopes as client_scopes',
        'u.username',
        'u.email',
        'u.display_name',
        'u.groups',
        'u.roles',
        'u.disabled',
      );
    return r ? toAccessGrant(r) : undefined;
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
