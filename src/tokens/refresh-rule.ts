import type { User } from '../users/model.ts';
import type { RefreshRow } from './model.ts';

/** A refresh token the rule found live: its user is there (and enabled). */
export type LiveRefreshRow = RefreshRow & { user: User };

/** Why a stored refresh token can no longer be used. */
export type DeadRefresh = 'revoked' | 'expired' | 'rotated' | 'client_disabled' | 'user_gone';

/**
 * The one rule of a refresh token's validity, for the refresh grant (`checkRefresh`) and
 * introspection (`liveRefresh`), so they cannot disagree: undefined while the token is live; else
 * why not, the first of: revoked (an admin, a logout, a credential change, its family's reuse),
 * expired, already rotated (a second use is a reuse, replays.ts), its client no longer allowed OAuth,
 * its user deleted or disabled. A session that ends revokes its tokens, so `revoked` covers it.
 * The row carries the client's flag and the user, read with the token in the same query.
 */
export function deadRefresh(row: RefreshRow, now: number): DeadRefresh | undefined {
  if (row.revokedAt !== null) return 'revoked';
  if (row.expiresAt <= now) return 'expired';
  if (row.rotatedAt !== null) return 'rotated';
  if (!row.clientOauthEnabled) return 'client_disabled';
  if (!row.user || row.user.disabled) return 'user_gone';
  return undefined;
}
