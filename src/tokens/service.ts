import type { Client } from '../clients/model.ts';
import type { Config } from '../config/schema.ts';
import { hashToken } from '../crypto/tokens.ts';
import type { SigningKeys } from '../keys/signing-keys.ts';
import type { Actor, AuditLog } from '../audit/record.ts';
import type { Origin } from '../audit/model.ts';
import { InputError } from '../errors/service.ts';
import type { Transaction } from '../db/transaction.ts';
import type { SessionStore } from '../login/sessions.ts';
import type { TokenQueries } from './queries.ts';
import { clock } from '../clock.ts';
import { judgeBearer, type Bearer } from './bearer.ts';
import { deadRefresh, type DeadRefresh, type LiveRefreshRow } from './refresh-rule.ts';
import { codeRules } from './codes.ts';
import { issuing } from './issue.ts';
import { replays } from './replays.ts';
import type { AuditTrail } from './trail.ts';

export type { CodeRequest, FoundCode } from './codes.ts';
export type { IssuedTokens, IssueRefusal, TokenRequest } from './issue.ts';
export type { Bearer, BearerRefusal } from './bearer.ts';
export type { AuditTrail } from './trail.ts';

export type RefreshOutcome =
  | { ok: true; row: LiveRefreshRow }
  | { ok: false; reason: 'unknown' | 'reused' | 'other_client' | Exclude<DeadRefresh, 'rotated'> };

/** What introspection may say of a refresh token: nothing unless it can still be used. */
export interface LiveRefresh {
  clientId: string;
  userId: string;
  scope: string;
  expiresAt: number;
}

/** What `revoke` and `revokeFor` need of a transaction (named here: the root that builds it imports this file). */
interface TokenTransaction {
  queries: { tokens: Pick<TokenQueries, 'findAccess' | 'findRefresh' | 'revokeWhere'> };
  sessions: Pick<SessionStore, 'endAllOf'>;
  tokens: {
    refuseCodes(where: { user_id?: string; client_id?: string }): Promise<number>;
    revokeWhere(where: Record<string, string>): Promise<number>;
  };
  audit: Pick<AuditLog, 'record' | 'change'>;
}

/**
 * The token rules, whoever asks: codes, issuing (with the id_token and the audit), refresh, bearer
 * authentication and revocation. Tokens are hashed here and nowhere else.
 */
export const tokenService = (
  queries: TokenQueries,
  config: Config,
  keys: SigningKeys,
  deps: { transaction: Transaction<TokenTransaction> },
) => ({
  ...codeRules(queries, config),

  issue: issuing(queries, config, keys),

  /**
   * Checks a refresh token of `client` for the refresh grant by the one rule (refresh-rule.ts); it is
   * spent later, with the issue of its successor. A token already rotated is a reuse (replays.ts).
   */
  async checkRefresh(token: string, client: Client, trail: AuditTrail): Promise<RefreshOutcome> {
    const row = await queries.findRefresh(hashToken(token));
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.clientId !== client.clientId) return { ok: false, reason: 'other_client' };
    const dead = deadRefresh(row, clock.now());
    if (dead === 'rotated') {
      await replays(queries).refreshReused(row.familyId, client.clientId, trail);
      return { ok: false, reason: 'reused' };
    }
    return dead ? { ok: false, reason: dead } : { ok: true, row: row as LiveRefreshRow };
  },

  /**
   * Whether a presented access token (opaque or JWT: both are stored by hash) is good, and for whom.
   * The one decision behind `/me`, userinfo, introspection and the admin API, so they cannot disagree;
   * each only shapes the answer for its wire.
   */
  async authenticate(bearer: string): Promise<Bearer> {
    return judgeBearer(await queries.findAccess(hashToken(bearer)), clock.now());
  },

  /**
   * `authenticate`, for a client asking about the token (introspection): with that client's version as
   * it is now, read in the same statement (src/oauth/client-endpoint.ts `checksClientVersion`).
   */
  async authenticateAsked(bearer: string, askerId: string): Promise<{ bearer: Bearer; askerVersion: number | undefined }> {
    const { grant, askerVersion } = await queries.findAccessAsked(hashToken(bearer), askerId);
    return { bearer: judgeBearer(grant, clock.now()), askerVersion };
  },

  /** A refresh token that the refresh grant would still take, by the same rule (refresh-rule.ts). */
  async liveRefresh(token: string): Promise<LiveRefresh | undefined> {
    const row = await queries.findRefresh(hashToken(token));
    if (!row || deadRefresh(row, clock.now())) return undefined;
    return { clientId: row.clientId, userId: row.userId, scope: row.scope, expiresAt: row.expiresAt };
  },

  /**
   * RFC 7009, for `client` at the revocation endpoint: an access token is revoked; a refresh token
   * takes its whole family with it. A client may revoke only its own tokens unless it holds the
   * `admin` role. A revocation is audited (`token.revoked`, the client its actor) in the same transaction.
   */
  revoke(token: string, client: Client, origin: Origin): Promise<'revoked' | 'unknown' | 'other_client'> {
    const hash = hashToken(token);
    const anyClient = client.roles.includes('admin');
    return deps.transaction(async (tx) => {
      const q = tx.queries.tokens;
      const access = await q.findAccess(hash);
      const refresh = access ? undefined : await q.findRefresh(hash);
      const owner = access?.clientId ?? refresh?.clientId;
      if (owner === undefined) return 'unknown';
      if (owner !== client.clientId && !anyClient) return 'other_client';
      await q.revokeWhere(access ? { token_hash: hash } : { family_id: refresh!.familyId }, clock.now());
      await tx.audit.record({
        kind: 'token.revoked',
        clientId: client.clientId,
        actorClientId: client.clientId,
        ip: origin.ip,
        requestId: origin.requestId,
      });
      return 'revoked';
    });
  },

  /** Revokes every token `where` says (a user's, a client's, or both). */
  revokeWhere: (where: Record<string, string>) => queries.revokeWhere(where, clock.now()),

  /** Refuses the unredeemed codes of a user, a client or both: their exchange answers `invalid_grant`. */
  refuseCodes: (where: { user_id?: string; client_id?: string }) => queries.refuseCodes(where, clock.now()),

  /**
   * An administrator's revocation: every token of a user, of a client, or of both; audited. The codes
   * not yet redeemed go with them; a user's alone also ends their SSO sessions (docs/decisions.md), so nothing
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
        count = (await tx.sessions.endAllOf(userId, { actor })).tokens;
      } else {
        // Codes first: an exchange running now then either finds its code refused or has its tokens revoked next.
        await tx.tokens.refuseCodes(where);
        count = await tx.tokens.revokeWhere(where);
      }
      await tx.audit.record({
        kind: 'token.revoked',
        userId,
        clientId,
        actorUserId: actor.userId,
        actorClientId: actor.clientId,
        ip: actor.ip,
        requestId: actor.requestId,
        details: { count },
      });
      await tx.audit.change('tokens.revoke', actor, { userId, clientId }, { count });
      return count;
    });
  },
});

export type TokenService = ReturnType<typeof tokenService>;
