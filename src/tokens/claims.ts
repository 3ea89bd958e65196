import type { User } from '../users/model.ts';
/** What a token's user looks like to claims: the fields of the users table that are shown. */
export type ClaimsUser = Pick<User, 'id' | 'username' | 'email' | 'emailVerified' | 'displayName' | 'groups'>;

/** The standard OIDC claims the scopes allow (docs/endpoints.md), shared by userinfo and the id_token. */
export function scopedClaims(user: ClaimsUser, scopes: string[]): Record<string, unknown> {
  const claims: Record<string, unknown> = { sub: user.id };
  if (scopes.includes('profile')) {
    claims.name = user.displayName ?? user.username;
    claims.preferred_username = user.username;
  }
  if (scopes.includes('email') && user.email) {
    claims.email = user.email;
    // Addresses from the administrator or the directory are verified; an upstream's that another
    // account held first is not (docs/decisions.md "Upstream emails"): a client must not take it as that account's.
    claims.email_verified = user.emailVerified;
  }
  if (scopes.includes('groups')) claims.groups = user.groups;
  return claims;
}
