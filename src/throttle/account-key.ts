import { createHmac } from 'node:crypto';

/**
 * The account a typed name means, as directories compare names: LDAP's caseIgnoreMatch ignores case
 * and leading, trailing and repeated inner spaces, and AD does the same. `" alice"`, `"ALICE"` and
 * `"alice"` are one account for the brute-force count, whichever backend holds it (SPEC 7).
 */
export const normaliseUsername = (typed: string): string => typed.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * The key the throttle counts an account under: a keyed hash of the normalised name, so a password
 * typed into the username field is never stored in clear, and the key has a fixed length whatever
 * was typed.
 */
export const accountKey = (key: Buffer, typed: string): string =>
  createHmac('sha256', key).update(normaliseUsername(typed)).digest('hex').slice(0, 48);
