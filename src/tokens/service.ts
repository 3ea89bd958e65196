import { randomUUID } from 'node:crypto';
import type { Client } from '../clients/queries.ts';
import type { Config } from '../config/schema.ts';
import { hashToken, randomToken } from '../crypto/tokens.ts';
import type { SigningKeys } from '../keys/signing-keys.ts';
import { JWT_ACCESS_TOKEN_MAX_TTL, signJwtAccessToken } from './jwt-access-token.ts';
import type { Actor } from '../audit/record.ts';
import { InputError } from '../service-errors.ts';
import type { Transaction } from '../services.ts';
import type { CodeRow, RefreshRow, Spend, TokenQueries } from './queries.ts';
import type { Amr } from '../mfa/service.ts';
import { clock } from '../clock.ts';

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
  amr: Amr[];
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
  /** How the user signed in, kept with the refresh token for the id_tokens of its refreshes. */
  amr?: Amr[] | null;
  withRefresh: boolean;
  /** The code or refresh token these tokens are issued for, spent in the same transaction. */
  spend?: Spend;
}

export interface IssuedTokens {
  accessToken: string;
  expiresIn: number;
  refreshToken?: string;
}

export type RefreshOutcome =
  | { ok: true; row: RefreshRow }
  | { ok: false; reason: 'unknown' | 'expired' | 'reused' | 'revoked' | 'other_client' };

export const tokenService = (queries: TokenQueries, config: Config, keys: SigningKeys, deps: { transaction: Transaction }) => ({
  async issueCode(req: CodeRequest): Promise<string> {
    const code = randomToken();
    const now = clock.now();
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
      amr: JSON.stringify(req.amr),
      expires_at: now + config.tokens.codeTtl * 1000,
      created_at: now,
    });
    return code;
  },

  /**
   * Looks a code up for an exchange; nothing is spent yet (that happens with the issue, in one
   * transaction). A code already used is a replay: everything it issued is revoked (RFC 6749 §4.1.2).
   * `signInEnded`: the code was refused since (its user's credentials changed) or its session is
   * gone (SPEC 7): the exchange must answer `invalid_grant`.
   */
  async findCode(code: string): Promise<(CodeRow & { signInEnded: boolean }) | 'invalid' | 'replayed' | 'expired'> {
    const now = clock.now();
    const codeHash = hashToken(code);
    const found = await queries.findCode(codeHash);
    if (!found) return 'invalid';
    if (found.consumed) {
      await queries.revokeWhere({ code_hash: codeHash }, now);
      return 'replayed';
    }
    const { row } = found;
    if (row.expiresAt <= now) return 'expired';
    const sessionGone = row.sessionId !== null && (row.sessionExpiresAt === null || row.sessionExpiresAt <= now);
    return { ...row, signInEnded: row.revokedAt !== null || sessionGone };
  },

  /** A failed exchange uses the code up all the same. */
  burnCode: (code: string) => queries.burnCode(hashToken(code), clock.now()),

  /**
   * Issues tokens; with `req.spend`, spends the code or refresh token they are issued for in the same
   * transaction. `'replayed'` when it was already spent: then everything issued from it is revoked,
   * after the winner's tokens were committed, so none survive (SPEC 7).
   */
  async issue(req: TokenRequest): Promise<IssuedTokens | 'replayed'> {
    const now = clock.now();
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
    const issued = await queries.insertTokens(
      { ...common, token_hash: hashToken(accessToken), user_id: req.userId, family_id: familyId, expires_at: now + accessTtl * 1000 },
      refreshToken
        ? {
            ...common,
            token_hash: hashToken(refreshToken),
            user_id: req.userId!,
            family_id: familyId!,
            auth_time: req.authTime ?? null,
            amr: req.amr ? JSON.stringify(req.amr) : null,
            expires_at: now + refreshTtl * 1000,
          }
        : undefined,
      req.spend,
      now,
    );
    if (!issued) {
      const spend = req.spend!;
      await queries.revokeWhere('code' in spend ? { code_hash: spend.code } : { family_id: req.familyId! }, now);
      return 'replayed';
    }
    return { accessToken, expiresIn: accessTtl, refreshToken };
  },

  /**
   * Checks a refresh token for the refresh grant; it is spent later, with the issue of its successor.
   * A token already rotated is a reuse: its whole family is revoked.
   */
  async checkRefresh(token: string, client: Client): Promise<RefreshOutcome> {
    const now = clock.now();
    const row = await queries.findRefresh(hashToken(token));
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.clientId !== client.clientId) return { ok: false, reason: 'other_client' };
    if (row.revokedAt !== null) return { ok: false, reason: 'revoked' };
    if (row.expiresAt <= now) return { ok: false, reason: 'expired' };
    if (row.rotatedAt !== null) {
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
      if (access.clientId !== clientId && !anyClient) return 'other_client';
      await queries.revokeWhere({ token_hash: hash }, clock.now());
      return 'revoked';
    }
    const refresh = await queries.findRefresh(hash);
    if (!refresh) return 'unknown';
    if (refresh.clientId !== clientId && !anyClient) return 'other_client';
    await queries.revokeWhere({ family_id: refresh.familyId }, clock.now());
    return 'revoked';
  },

  revoke: (where: Record<string, string>) => queries.revokeWhere(where, clock.now()),

  /** Refuses the unredeemed codes of a user, a client or both: their exchange answers `invalid_grant`. */
  refuseCodes: (where: { user_id?: string; client_id?: string }) => queries.refuseCodes(where, clock.now()),

  /**
   * An administrator's revocation: every token of a user, of a client, or of both; audited. The codes
   * not yet redeemed go with them; a user's alone also ends their SSO sessions (SPEC 7), so nothing
   * signed in before can fetch new tokens.
   */
  async revokeFor(filter: { userId?: string | null; clientId?: string | null }, actor: Actor): Promise<number> {
    const { userId, clientId } = filter;
    if (!userId && !clientId) throw new InputError('userId', 'give userId or clientId, or both');
    const where: Record<string, string> = {};
    if (userId) where.user_id = userId;
    if (clientId) where.client_id = clientId;
    return deps.transaction(async (tx) => {
      let count: number;
      if (userId && !clientId) {
        count = (await tx.sessions.endAllOf(userId, { reason: 'tokens_revoked', actor })).tokens;
      } else {
        // Codes first: an exchange running now then either finds its code refused or has its tokens revoked next.
        await tx.tokens.refuseCodes(where);
        count = await tx.tokens.revoke(where);
      }
      await tx.audit.record({ kind: 'token.revoked', userId, clientId, actorUserId: actor.userId, actorClientId: actor.clientId, ip: actor.ip, requestId: actor.requestId, details: { count } });
      await tx.audit.change('tokens.revoke', actor, { userId, clientId }, { count });
      return count;
    });
  },
});

export type TokenService = ReturnType<typeof tokenService>;
