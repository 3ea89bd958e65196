import type { Client } from '../clients/model.ts';
import { scopedClaims } from '../tokens/claims.ts';
import type { User } from '../users/model.ts';
import { mappedClaims } from './mappings.ts';
import type { ClaimTarget, Member } from './model.ts';
import { rolesOf } from './policy.ts';

/** What the release rules read of a user record. */
export type ReleasedUser = Pick<
  User,
  'id' | 'backend' | 'username' | 'email' | 'emailVerified' | 'displayName' | 'groups' | 'attributes' | 'disabled'
>;

/** What an OAuth client's release rules are: its roles and its claim mappings. */
export type ReleasingClient = Pick<Client, 'appRoles' | 'claimMappings'>;

/**
 * The user as an application's rules read them. An email an upstream claimed but another account
 * holds (docs/decisions.md "Upstream emails") is no email here: a mapping never releases it.
 */
export const memberOf = (user: ReleasedUser): Member => ({
  id: user.id,
  backend: user.backend,
  username: user.username,
  email: user.emailVerified ? user.email : null,
  groups: user.groups,
  attributes: user.attributes,
  disabled: user.disabled,
});

const NONE: Readonly<Record<string, never>> = Object.freeze({});

/**
 * The claims one application adds for a user in one target (docs/access-and-claims.md): `roles`, its
 * roles of this application, when it has roles, and its mapped claims. Nothing, cheaply, for the
 * applications that have neither (the hot paths of most deployments).
 */
export function applicationClaims(
  client: ReleasingClient,
  user: ReleasedUser,
  scopes: readonly string[],
  target: ClaimTarget,
): Readonly<Record<string, unknown>> {
  if (client.appRoles.length === 0 && client.claimMappings.length === 0) return NONE;
  const member = memberOf(user);
  const roles = rolesOf(client.appRoles, member);
  const claims: Record<string, unknown> = client.appRoles.length > 0 ? { roles } : {};
  return Object.assign(claims, mappedClaims(client.claimMappings, target, scopes, member, roles));
}

/**
 * A user's claims as an id_token or userinfo tells them to one client: the standard claims the scopes
 * allow, then the client's own (roles, mappings), which may add claims but never replace `sub`.
 * An `email` the client's own claims set to anything but the user's verified address comes with
 * `email_verified: false`: Latchkey vouches for no other value (docs/access-and-claims.md "Claim mappings").
 * The one function the tokens and the admin's preview both call, so the preview is what is issued.
 */
export function userClaims(
  client: ReleasingClient,
  user: ReleasedUser,
  scopes: string[],
  target: 'id_token' | 'userinfo',
): Record<string, unknown> {
  const standard = scopedClaims(user, scopes);
  const own = applicationClaims(client, user, scopes, target);
  if (own === NONE) return standard;
  const claims: Record<string, unknown> = { ...standard, ...own, sub: standard.sub };
  if ('email' in own && own.email !== (user.emailVerified ? user.email : null)) claims.email_verified = false;
  return claims;
}
