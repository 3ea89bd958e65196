import type { Entry } from 'ldapts';
import type { Identity } from '../../src/identity/plugin-kit.ts';
import { ACCOUNT_STATE_ATTRIBUTES, accountState } from './account-state.ts';
import { externalId, extraAttributes, first, isBinaryId, strings } from './attributes.ts';
import type { LdapConfig } from './config.ts';
import { rolesFor, type Group } from './groups.ts';

/**
 * The attributes of a user entry that make an `Identity`: read by a sign-in's search and by directory
 * sync's listing alike, so that both see the same user. `memberOf` only without `groupSearch`.
 */
export function userAttributes(config: LdapConfig): string[] {
  const us = config.userSearch;
  const attributes = [
    us.usernameAttr,
    us.idAttr,
    us.emailAttr,
    us.nameAttr,
    ...ACCOUNT_STATE_ATTRIBUTES,
    // Read with the entry, so they cost no round trip of their own (docs/identity-backends.md).
    ...config.extraAttributes,
  ];
  if (!config.groupSearch) attributes.push('memberOf');
  return attributes;
}

/** The attributes ldapts must hand over as bytes (AD's objectGUID), wherever they are asked for. */
export const binaryAttributes = (config: LdapConfig): string[] => [config.userSearch.idAttr, ...config.extraAttributes].filter(isBinaryId);

/**
 * A user entry as Latchkey's `Identity`, the same for a sign-in, a refresh, a lookup and a sync pass.
 * `typed`: the name typed at sign-in; of several values of `usernameAttr` (uid may have more), that one
 * is reported, and without one (a sync pass) the first. The caller has checked that the entry has its
 * id attribute.
 */
export function toIdentity(config: LdapConfig, entry: Entry, groups: Group[], typed?: string, o: { forSync?: boolean } = {}): Identity {
  const us = config.userSearch;
  // The account's state as the entry tells it (AD, 389 DS, OpenLDAP ppolicy); a sync pass counts only
  // an administrator's ppolicy lock, not a lockout by failed binds.
  const refusal = accountState(entry, Date.now(), { lockouts: !o.forSync });
  const names = strings(entry, us.usernameAttr);
  const lower = typed?.toLowerCase();
  return {
    externalId: externalId(entry, us.idAttr)!,
    username: (lower === undefined ? undefined : names.find((n) => n.toLowerCase() === lower)) ?? names[0] ?? typed ?? '',
    email: first(entry, us.emailAttr) ?? null,
    displayName: first(entry, us.nameAttr) ?? null,
    groups: groups.map((g) => g.name),
    roles: rolesFor(groups, config.adminGroups, config.adminRoleGroups),
    // Always reported: the directory owns them, so an attribute gone from the entry, or from
    // `extraAttributes`, goes from the record too (docs/access-and-claims.md).
    attributes: extraAttributes(entry, config.extraAttributes),
    ...(refusal ? { disabled: true, refusal } : { disabled: false }),
  };
}
