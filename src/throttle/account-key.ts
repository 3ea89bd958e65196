import { createHmac } from 'node:crypto';

/**
 * The account a typed name means, as directories compare names: LDAP's caseIgnoreMatch ignores case
 * and leading, trailing and repeated inner spaces, and AD does the same. `" alice"`, `"ALICE"` and
 * `"alice"` are one account for the brute-force count, whichever backend holds it (docs/decisions.md). Other
 * names of one directory entry (a UPN beside the sAMAccountName, a filter that also matches `mail`)
 * are counted apart: the count is taken before any backend is asked who the name belongs to.
 */
export const normaliseUsername = (typed: string): string =>
  typed
    .normalize('NFKC')
    // RFC 4518's "mapped to nothing": soft hyphen, zero-width and joiner characters, variation selectors.
    // biome-ignore lint/suspicious/noMisleadingCharacterClass: each code point is listed (as an escape) to be stripped on its own, joiners and variation selectors included; none is meant to combine with a neighbour.
    .replace(/[\u00AD\u034F\u1806\u180B-\u180E\u200B-\u200D\u2060\uFE00-\uFE0F\uFEFF\uFFFC]/g, '')
    .trim()
    .replace(/\s+/g, ' ')
    .toLowerCase();

/**
 * The key the throttle counts an account under: a keyed hash of the normalised name, so a password
 * typed into the username field is never stored in clear, and the key has a fixed length whatever
 * was typed.
 */
export const accountKey = (key: Buffer, typed: string): string =>
  createHmac('sha256', key).update(normaliseUsername(typed)).digest('hex').slice(0, 48);
