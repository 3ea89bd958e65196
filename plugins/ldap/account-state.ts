import { ResultCodeError, type Entry } from 'ldapts';
import type { AccountRefusal } from '../../src/identity/plugin-kit.ts';
import { first, isDisabled, isExpired } from './attributes.ts';

/**
 * The attributes that say whether a directory still lets an account sign in, read with the user's
 * entry at every sign-in and every refresh. A directory ignores the names it does not know, so one list
 * serves every kind. The operational ones are returned only when asked for by name, and only if the
 * service account may read them (389 DS's ACIs must name `nsAccountLock` explicitly).
 */
export const ACCOUNT_STATE_ATTRIBUTES = [
  // Active Directory: the ACCOUNTDISABLE flag, and the expiry date.
  'userAccountControl',
  'accountExpires',
  // 389 Directory Server (and Red Hat / Oracle DS): an administrator's lock (`dsidm account lock`).
  'nsAccountLock',
  // OpenLDAP's ppolicy overlay: set while the account is locked (by failures or by an administrator).
  'pwdAccountLockedTime',
] as const;

/**
 * Why the directory refuses the account, from its entry, or undefined when it lets it sign in. The
 * refresh grant binds nothing, so this is all it knows; a sign-in also hears the bind's own answer.
 * `pwdAccountLockedTime` counts while it is set: ppolicy clears a lockout that has run its time at the
 * next successful bind, so such a user's refresh is refused until they sign in again.
 */
export function accountState(entry: Entry, now: number, o: { lockouts?: boolean } = {}): AccountRefusal | undefined {
  if (isExpired(entry, now)) return 'account_expired';
  if (isDisabled(entry)) return 'disabled';
  if (first(entry, 'nsAccountLock')?.trim().toLowerCase() === 'true') return 'disabled';
  const locked = first(entry, 'pwdAccountLockedTime');
  // `lockouts: false` (a sync pass): only an administrator's lock counts. ppolicy also sets the
  // attribute after too many failed binds, which anyone who knows a name can cause: that refuses a
  // sign-in, but must not make the user a leaver (docs/directory-sync.md "What a pass does").
  if (locked && (o.lockouts !== false || locked.trim() === ADMIN_LOCK)) return 'disabled';
  return undefined;
}

/** ppolicy's value for a lock by an administrator, which never times out (draft-behera-ldap-password-policy 5.3.3). */
const ADMIN_LOCK = '000001010000Z';

/** LDAP's unwillingToPerform. */
const UNWILLING_TO_PERFORM = 53;

/**
 * 389 Directory Server refuses the bind of an inactivated account (`nsAccountLock`, or the Account
 * Policy plugin's inactivity limit) with result 53 "Account inactivated" before it looks at the
 * password. That is an answer about the account, not an outage. It cannot tell a right password from a
 * wrong one, so the refusal is told whatever the password (unlike AD's 775, which a guesser's failures
 * cause): an administrator disabled the account, and its owner is told why.
 */
export const isInactivatedAccount = (err: unknown): boolean =>
  err instanceof ResultCodeError && err.code === UNWILLING_TO_PERFORM && /inactiv/i.test(err.message);
