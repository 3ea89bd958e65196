/** What a token's user looks like to claims: the fields of the users table that are shown. */
export interface ClaimsUser {
  id: string;
  username: string;
  email: string | null;
  displayName: string | null;
  groups: string[];
}

/** The standard OIDC claims the scopes allow (SPEC 2.3), shared by userinfo and the id_token. */
export function scopedClaims(user: ClaimsUser, scopes: string[]): Record<string, unknown> {
  const claims: Record<string, unknown> = { sub: user.id };
  if (scopes.includes('profile')) {
    claims.name = user.displayName ?? user.username;
    claims.preferred_username = user.username;
  }
  if (scopes.includes('email') && user.email) {
    claims.email = user.email;
    // Addresses come from the administrator or the directory, not from the user: treated as verified.
    claims.email_verified = true;
  }
  if (scopes.includes('groups')) claims.groups = user.groups;
  return claims;
}
