import type { Entry } from 'ldapts';
import { first } from './attributes.ts';
import type { LdapConfig } from './config.ts';
import { and, escapeFilterValue, everyUserFilter } from './filter.ts';

/**
 * AD's account state computed at the moment (a constructed attribute, read by name): its UF_LOCKOUT bit
 * is set while the account is locked out, which `userAccountControl` itself never shows.
 */
export const LOCKOUT_ATTRIBUTES = ['msDS-User-Account-Control-Computed'] as const;
const UF_LOCKOUT = 0x10;

export const isLockedOut = (entry: Entry): boolean => (Number(first(entry, LOCKOUT_ATTRIBUTES[0]) ?? 0) & UF_LOCKOUT) !== 0;

/**
 * The search filter of the user a Kerberos client principal names (docs/identity-backends.md "Desktop
 * single sign-on"), or undefined for a principal of another realm: `userSearch.filter` with any name
 * (so whatever it excludes is excluded here too), and the principal as `principalAttribute` says, the
 * UPN whole or the name before `@REALM` as sAMAccountName.
 */
export function principalFilter(config: LdapConfig, principal: string): string | undefined {
  const k = config.kerberos;
  const at = principal.lastIndexOf('@');
  if (!k || at <= 0 || principal.slice(at + 1).toUpperCase() !== k.realm.toUpperCase()) return undefined;
  const match =
    k.principalAttribute === 'sAMAccountName'
      ? `(sAMAccountName=${escapeFilterValue(principal.slice(0, at))})`
      : `(userPrincipalName=${escapeFilterValue(principal)})`;
  return and(everyUserFilter(config.userSearch.filter), match);
}
