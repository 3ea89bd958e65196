import { randomUUID } from 'node:crypto';
import type { Client } from '../clients/queries.ts';
import type { Config } from '../config/schema.ts';
import { hashToken, randomToken } from '../crypto/tokens.ts';
import type { SigningKeys } from '../keys/signing-keys.ts';
import { JWT_ACCESS_TOKEN_MAX_TTL, signJwtAccessToken } from './jwt-access-token.ts';
import type { CodeRow, RefreshRow, TokenQueries } from './queries.ts';

export interface CodeRequest {
  client: Client;
  userId: string;
  sessionId: string | null;
  redirectUri: string;
  scope: string;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  authTime: number;
}

export interface TokenRequest {
  client: Client;
  userId: string | null;
  scope: string;
  /** Keeps a refresh token's lineage: rotation reuses it, and reuse revokes it whole. */
  familyId?: string;
  codeHash?: string | null;
  sessionId?: string | null;
  authTime?: number | null;
  withRefresh: boolean;
}

export interface IssuedTokens {
  accessToken: string;
  expiresIn: number;
  refreshToken?: string;
}

export type RefreshOutcome =
  | { ok: true; row: RefreshRow }
  | { ok: false; reason: 'unknown' | 'expired' | 'reused' | 'revoked' | 'other_client' };

export const tokenService = (queries: TokenQueries, config: Config, keys: SigningKeys) => ({
  async issueCode(req: CodeRequest): Promise<string> {
    const code = randomToken();
    const now = Date.now();
    await queries.insertCode({
      code_hash: hashToken(code),
      client_id: req.client.clientId,
      user_id: req.userId,
      session_id: req.sessionId,
      redirect_uri: req.redirectUri,
      scope: req.scope,
      nonce: req.nonce,
      code_challenge: req.codeChallenge,
      code_challenge_method: req.codeChallengeMethod,
      auth_time: req.authTime,
      expires_at: now + config.tokens.codeTtl * 1000,
      created_at: now,
    });
    return code;
  },

  /**
   * Redeems a code once. A second redemption is a replay: everything the code issued is revoked
   * (RFC 6749 §4.1.2) and the caller answers `invalid_code`.
   */
  async redeemCode(code: string): Promise<CodeRow | 'invalid' | 'replayed' | 'expired'> {
    const now = Date.now();
    const codeHash = hashToken(code);
    const found = await queries.consumeCode(codeHash, now);
    if (!found) return 'invalid';
    if (!found.fresh) {
      await queries.revokeWhere({ code_hash: codeHash }, now);
      return 'replayed';
    }
    if (found.row.expiresAt <= now) return 'expired';
    return found.row;
  },

  async issue(req: TokenRequest): Promise<IssuedTokens> {
    const now = Date.now();
    const jwt = req.client.accessTokenFormat === 'jwt';
    const configuredTtl = req.client.accessTokenTtl ?? config.tokens.accessTokenTtl;
    const accessTtl = jwt ? Math.min(configuredTtl, JWT_ACCESS_TOKEN_MAX_TTL) : configuredTtl;
    const refreshTtl = req.client.refreshTokenTtl ?? config.tokens.refreshTokenTtl;
    const accessToken = jwt
      ? await signJwtAccessToken(keys, { issuer: config.publicUrl, clientId: req.client.clientId, userId: req.userId, scope: req.scope, ttl: accessTtl, authTime: req.authTime })
      : randomToken();
    const refreshToken = req.withRefresh && req.userId ? randomToken() : undefined;
    const familyId = refreshToken ? (req.familyId ?? randomUUID()) : null;
    const common = {
      client_id: req.client.clientId,
      scope: req.scope,
      code_hash: req.codeHash ?? null,
      session_id: req.sessionId ?? null,
      created_at: now,
    };
    await queries.insertTokens(
      { ...common, token_hash: hashToken(accessToken), user_id: req.userId, family_id: familyId, expires_at: now + accessTtl * 1000 },
      refreshToken
        ? {
            ...common,
            token_hash: hashToken(refreshToken),
            user_id: req.userId!,
            family_id: familyId!,
            auth_time: req.authTime ?? null,
            expires_at: now + refreshTtl * 1000,
          }
        : undefined,
    );
    return { accessToken, expiresIn: accessTtl, refreshToken };
  },

  /** Checks and retires a refresh token; a reused one revokes its whole family. */
  /**
   * Spends a refresh token. `beforeSpend` runs once the token is known valid and before it is marked
   * used: a check that throws there (the user's directory is down) leaves the token usable.
   */
  async rotateRefresh(token: string, client: Client, beforeSpend?: (row: RefreshRow) => Promise<void>): Promise<RefreshOutcome> {
    const now = Date.now();
    const row = await queries.findRefresh(hashToken(token));
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.clientId !== client.clientId) return { ok: false, reason: 'other_client' };
    if (row.revokedAt !== null) return { ok: false, reason: 'revoked' };
    if (row.expiresAt <= now) return { ok: false, reason: 'expired' };
    if (row.rotatedAt === null) await beforeSpend?.(row);
    if (row.rotatedAt !== null || !(await queries.markRotated(row.tokenHash, now))) {
      await queries.revokeWhere({ family_id: row.familyId }, now);
      return { ok: false, reason: 'reused' };
    }
    return { ok: true, row };
  },

  findAccess: (token: string) => queries.findAccess(hashToken(token)),

  findRefresh: (token: string) => queries.findRefresh(hashToken(token)),

  /**
   * RFC 7009: an access token is deleted; a refresh token takes its whole family with it. A client may
   * revoke only its own tokens unless `anyClient` (it holds the admin role).
   */
  async revokeToken(token: string, clientId: string, anyClient = false): Promise<'revoked' | 'unknown' | 'other_client'> {
    const hash = hashToken(token);
    const access = await queries.findAccess(hash);
    if (access) {
      if (access.client_id !== clientId && !anyClient) return 'other_client';
      await queries.revokeWhere({ token_hash: hash }, Date.now());
      return 'revoked';
    }
    const refresh = await queries.findRefresh(hash);
    if (!refresh) return 'unknown';
    if (refresh.clientId !== clientId && !anyClient) return 'other_client';
    await queries.revokeWhere({ family_id: refresh.familyId }, Date.now());
    return 'revoked';
  },

  revoke: (where: Record<string, string>) => queries.revokeWhere(where, Date.now()),
});

export type TokenService = ReturnType<typeof tokenService>;
