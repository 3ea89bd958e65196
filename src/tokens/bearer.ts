import type { AccessGrant } from './model.ts';

/**
 * Why an access token is no good. A revoked token and a token of a deleted client or user are gone
 * from the table (revocation deletes the row; deletion cascades), so they are `unknown`: no endpoint
 * can tell them from a token never issued, and none needs to.
 */
export type BearerRefusal =
  | 'unknown'
  | 'expired'
  /** The token's user was deleted (a row the cascade has not reached, or a user id without a user). */
  | 'user_gone'
  | 'user_disabled'
  /** Its client's `oauthEnabled` is off (docs/endpoints.md `app_unsupport_oauth`): it may not use these endpoints at all. */
  | 'oauth_disabled';

/** The one answer about a presented access token, opaque or JWT, that every endpoint shapes its own way. */
export type Bearer = { ok: true; grant: AccessGrant } | { ok: false; refusal: BearerRefusal; clientId?: string };

/**
 * The rule itself, apart from the read so it can be read whole. Order: the token's own state first,
 * then its user, then its client, as `/me` has always answered (a disabled user's token is
 * `invalid_access_token` there even when its client is off too).
 */
export function judgeBearer(grant: AccessGrant | undefined, now: number): Bearer {
  if (!grant) return { ok: false, refusal: 'unknown' };
  // A refusal of a token that was issued names its client, whose error codes the answer uses (docs/connect-an-application.md).
  const { clientId } = grant;
  if (grant.expiresAt <= now) return { ok: false, refusal: 'expired', clientId };
  if (grant.userId !== null && !grant.user) return { ok: false, refusal: 'user_gone', clientId };
  if (grant.user?.disabled) return { ok: false, refusal: 'user_disabled', clientId };
  if (!grant.client.oauthEnabled) return { ok: false, refusal: 'oauth_disabled', clientId };
  return { ok: true, grant };
}
