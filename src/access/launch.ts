/**
 * Where "My applications" sends a user to start using an application (docs/access-and-claims.md "My
 * applications"): a client's `initiate_login_uri` with `iss` (OpenID Connect Core 4, third-party
 * initiated login), or an SP's IdP-initiated sign-on.
 */
export function launchUrl(initiateLoginUri: string | null, issuer: string): string | null {
  if (!initiateLoginUri) return null;
  const url = new URL(initiateLoginUri);
  url.searchParams.set('iss', issuer);
  return url.toString();
}

/** An SP's IdP-initiated sign-on URL, when it allows one. */
export const samlLaunchUrl = (sp: { entityId: string; allowIdpInitiated: boolean }, publicUrl: string): string | null =>
  sp.allowIdpInitiated ? `${publicUrl}/saml/v20/sso?${new URLSearchParams({ sp: sp.entityId })}` : null;
