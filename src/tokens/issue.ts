import { applicationClaims, type ReleasedUser } from '../access/release.ts';
import type { Client, GrantType } from '../clients/model.ts';
import { audClaim } from '../clients/resource.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { hashToken, randomToken, timeOrderedId } from '../crypto/tokens.ts';
import type { SigningKeys } from '../keys/signing-keys.ts';
import type { Amr } from '../login/model.ts';
import { CODE_HASH, type FoundCode } from './codes.ts';
import { signIdToken } from './id-token.ts';
import { issuerAudience, JWT_ACCESS_TOKEN_MAX_TTL, signJwtAccessToken } from './jwt-access-token.ts';
import type { TokenQueries } from './queries.ts';
import type { RefreshRow, Spend } from './model.ts';
import { replays } from './replays.ts';
import type { AuditTrail } from './trail.ts';

/** What a grant decided; the token service issues from it. */
export interface TokenRequest {
  client: Client;
  grantType: GrantType;
  /** The user the tokens are for; null for client_credentials. */
  userId: string | null;
  /** That user as the grant read them: the claims an id_token (and a JWT access token) shows. */
  user?: ReleasedUser;
  scopes: string[];
  /**
   * The code or refresh token these tokens are issued for, as the service found it: spent in the same
   * transaction as their issue. A refresh token's successor keeps its lineage (family and code).
   */
  from?: { code: FoundCode } | { refresh: RefreshRow };
  sessionId?: string | null;
  authTime?: number | null;
  /** How the user signed in (RFC 8176): the id_token's `amr`, kept with a refresh token. */
  amr?: Amr[] | null;
  nonce?: string | null;
  /**
   * RFC 8707: the resources the grant allows (space-separated), as the grant settled them (the code's,
   * the refresh token's or the request's); a refresh token keeps them.
   */
  resource?: string | null;
  /** The resources this access token is for, when the request named some of the grant's; else `resource`. */
  audience?: string | null;
  /**
   * `client` is a copy this process kept, not checked against its row: the version the row must still
   * have, checked by the access token's insert itself ('client_changed' when it has another, and
   * nothing is written). Only for an issue that spends nothing (client_credentials).
   */
  clientVersion?: number;
}

export interface IssuedTokens {
  accessToken: string;
  expiresIn: number;
  refreshToken?: string;
  /** When the scopes hold `openid` and there is a user. */
  idToken?: string;
  scope: string;
}

/**
 * Why nothing was issued: what the tokens were for was spent meanwhile by a concurrent request, or the
 * client's row is no longer the copy the request ran on (`clientVersion`).
 */
export type IssueRefusal = 'code_replayed' | 'refresh_reused' | 'client_changed';

/**
 * What spending `from` means to the queries (a code by its hash, a refresh token by its own), and the
 * lineage the new tokens keep: a refresh token's family, and the code hash its tokens carried when it
 * was issued before codes named their family (what a replay of that code still revokes by).
 */
function lineage(from: TokenRequest['from']): { spend?: Spend; codeHash: string | null; familyId?: string } {
  if (!from) return { codeHash: null };
  // The code names the family it issued when it is spent (migrations/20261209000000_code_family.ts).
  if ('code' in from) return { spend: { code: from.code[CODE_HASH] }, codeHash: null };
  return { spend: { refresh: from.refresh.tokenHash }, codeHash: from.refresh.codeHash, familyId: from.refresh.familyId };
}

/**
 * Issues tokens; spends what they are issued for in the same transaction. When that was already
 * spent, everything issued from it is revoked, after the winner's tokens were committed, so none
 * survive (docs/decisions.md). Each outcome is audited here, once: an issue's `token.issued` event
 * commits with its tokens (or is counted in its client's minute, for client_credentials).
 */
export const issuing = (queries: TokenQueries, config: Config, keys: SigningKeys) =>
  async function issue(req: TokenRequest, trail: AuditTrail): Promise<IssuedTokens | IssueRefusal> {
    const { client, userId } = req;
    const now = clock.now();
    const scope = req.scopes.join(' ');
    const jwt = client.accessTokenFormat === 'jwt';
    const configuredTtl = client.accessTokenTtl ?? config.tokens.accessTokenTtl;
    const accessTtl = jwt ? Math.min(configuredTtl, JWT_ACCESS_TOKEN_MAX_TTL) : configuredTtl;
    const refreshTtl = client.refreshTokenTtl ?? config.tokens.refreshTokenTtl;
    const audience = req.audience ?? req.resource ?? client.defaultAudience ?? issuerAudience(config.publicUrl);
    const accessToken = jwt
      ? await signJwtAccessToken(keys, {
          issuer: config.publicUrl,
          clientId: client.clientId,
          audience: audClaim(audience),
          userId,
          scope,
          ttl: accessTtl,
          authTime: req.authTime,
          application: userId && req.user ? applicationClaims(client, req.user, req.scopes, 'access_token') : undefined,
        })
      : randomToken();
    const refreshToken = client.grantTypes.includes('refresh_token') && userId ? randomToken() : undefined;

    const { spend, codeHash, familyId: kept } = lineage(req.from);
    const event = {
      kind: 'token.issued' as const,
      userId,
      clientId: client.clientId,
      ip: trail.ip,
      requestId: trail.requestId,
      details: { grant: req.grantType, scope },
    };
    const summed = trail.issues.summed(event);
    // A new family's id is time-ordered (UUIDv7): the two family_id indexes then grow at their end, where
    // the concurrent issues of one group commit share a page, instead of each writing a page at random
    // (two of the nine pages a code flow wrote into the WAL; issue 37, docs/performance.md). It is an
    // internal key, never a secret: the tokens themselves stay random.
    // Tokens issued from a code are a family even without a refresh token: a replay of the code revokes it.
    const familyId = refreshToken || (spend && 'code' in spend) ? (kept ?? timeOrderedId()) : null;
    const common = {
      client_id: client.clientId,
      scope,
      code_hash: codeHash,
      session_id: req.sessionId ?? null,
      created_at: now,
    };
    const inserted = await queries.insertTokens(
      { ...common, token_hash: hashToken(accessToken), user_id: userId, family_id: familyId, audience, expires_at: now + accessTtl * 1000 },
      refreshToken
        ? {
            ...common,
            token_hash: hashToken(refreshToken),
            user_id: userId!,
            family_id: familyId!,
            auth_time: req.authTime ?? null,
            amr: req.amr ? JSON.stringify(req.amr) : null,
            resource: req.resource ?? null,
            expires_at: now + refreshTtl * 1000,
          }
        : undefined,
      spend,
      now,
      summed ? undefined : event,
      req.clientVersion === undefined || spend ? undefined : { clientId: client.clientId, version: req.clientVersion },
    );
    if (!inserted) {
      if (req.clientVersion !== undefined && !spend) return 'client_changed';
      // A concurrent request spent it first; what that one issued is revoked now.
      if (spend && 'code' in spend) {
        await replays(queries).codeReplayed(spend.code, client.clientId, trail);
        return 'code_replayed';
      }
      await replays(queries).refreshReused(kept!, client.clientId, trail);
      return 'refresh_reused';
    }

    const idToken =
      userId && req.user && req.scopes.includes('openid')
        ? await signIdToken(keys, config, client, accessToken, {
            user: req.user,
            scopes: req.scopes,
            authTime: req.authTime,
            amr: req.amr,
            nonce: req.nonce,
            sessionId: req.sessionId,
          })
        : undefined;
    if (summed) trail.issues.count(event);
    return { accessToken, expiresIn: accessTtl, refreshToken, idToken, scope };
  };
