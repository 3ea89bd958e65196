import { createHmac } from 'node:crypto';
import { mappedAttributes, mappedValues, NAME_FORMAT_URNS, type SamlAttribute } from '../access/mappings.ts';
import { rolesOf } from '../access/policy.ts';
import { memberOf } from '../access/release.ts';
import type { Member } from '../access/model.ts';
import type { User } from '../users/model.ts';
import { newId } from './assertion.ts';
import type { NameIdFormat, ServiceProvider } from './model.ts';

/** What one assertion tells a service provider about a user: the NameID and the attributes. */
export interface SamlRelease {
  nameId: string;
  nameIdFormat: NameIdFormat;
  attributes: SamlAttribute[];
}

/** The email an SP may be told: only a verified one, since SPs key accounts by it (docs/decisions.md "Upstream emails"). */
const verifiedEmail = (user: User): string | null => (user.emailVerified ? user.email : null);

/** The first value of a user attribute, as mappings read attributes; undefined when the user has none. */
const firstAttributeValue = (member: Member, attribute: string): string | undefined =>
  mappedValues({ source: 'attribute', attribute, value: null, groupFilter: null, multiValued: false }, member, [])[0];

/**
 * The NameID an SP sees (docs/saml-applications.md, docs/access-and-claims.md). `persistent` is pairwise:
 * an HMAC of the user's id and the SP's entityID under a key derived from the server secret, so it is
 * stable for the pair and two SPs cannot join their users on it. `transient` is new at every assertion.
 * `emailAddress` is the verified mail (the username when there is none); `unspecified` the user
 * attribute the SP's `nameIdAttribute` names (its first value), else the username.
 */
export function nameIdOf(
  user: User,
  sp: Pick<ServiceProvider, 'entityId' | 'nameIdAttribute'>,
  format: NameIdFormat,
  pairwiseKey: Buffer,
): string {
  switch (format) {
    case 'persistent':
      return createHmac('sha256', pairwiseKey).update(`${user.id}\n${sp.entityId}`).digest('base64url');
    case 'transient':
      // 160 random bits, new for every assertion: two sign-ons cannot be joined on it.
      return newId();
    case 'emailAddress': {
      const email = verifiedEmail(user);
      if (email) return email;
      // No verified email: the username, unless it is that same unverified address (an upstream's user
      // named by their email), which must not reach the SP as an email identifier either.
      return user.email && user.username.toLowerCase() === user.email.toLowerCase() ? user.id : user.username;
    }
    case 'unspecified':
      if (!sp.nameIdAttribute) return user.username;
      // A user without the attribute is named by their Latchkey id, which no attribute value or username
      // can equal: falling back to the username could hand the SP another user's identifier.
      return firstAttributeValue(memberOf(user), sp.nameIdAttribute) ?? user.id;
  }
}

/** The fixed attribute set (an SP without `attributeMappings`), by the names an SP chooses among. */
const FIXED_ATTRIBUTES: Record<string, (u: User) => string[]> = {
  uid: (u) => [u.username],
  mail: (u) => (verifiedEmail(u) ? [u.email!] : []),
  displayName: (u) => (u.displayName ? [u.displayName] : []),
  groups: (u) => u.groups,
};

/**
 * The attributes of an SP's assertions (docs/access-and-claims.md): with `attributeMappings`, exactly
 * what they map; without, the fixed set the SP chose and, when the SP has roles, the user's roles of
 * it in an attribute named `rolesAttribute` (default `roles`). An attribute without a value is left out.
 */
export function samlAttributes(sp: ServiceProvider, user: User): SamlAttribute[] {
  if (sp.attributeMappings === null && sp.appRoles.length === 0) return fixedAttributes(sp, user);
  const member = memberOf(user);
  const roles = rolesOf(sp.appRoles, member);
  if (sp.attributeMappings !== null) return mappedAttributes(sp.attributeMappings, member, roles);
  const fixed = fixedAttributes(sp, user);
  return roles.length > 0 ? [...fixed, basic(sp.rolesAttribute ?? 'roles', roles)] : fixed;
}

const basic = (name: string, values: string[]): SamlAttribute => ({ name, nameFormat: NAME_FORMAT_URNS.basic, friendlyName: null, values });

function fixedAttributes(sp: Pick<ServiceProvider, 'attributes'>, user: User): SamlAttribute[] {
  return sp.attributes.map((name) => basic(name, FIXED_ATTRIBUTES[name]?.(user) ?? [])).filter((a) => a.values.length > 0);
}

/**
 * What an assertion to `sp` tells about `user`: its NameID (in `format`, the SP's own unless the
 * sign-on settled one) and its attributes. The one decision the assertion and the admin's preview
 * share; it issues and records nothing, and its only effect is a transient NameID's randomness.
 */
export function samlRelease(sp: ServiceProvider, user: User, pairwiseKey: Buffer, format: NameIdFormat = sp.nameIdFormat): SamlRelease {
  return { nameId: nameIdOf(user, sp, format, pairwiseKey), nameIdFormat: format, attributes: samlAttributes(sp, user) };
}
