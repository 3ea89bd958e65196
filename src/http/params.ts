import type { Request } from 'express';
import { oauthError } from '../errors/oauth.ts';

export type Params = Record<string, string>;

/** Longer than any legitimate value (a redirect URI, a state, an id_token_hint) ever is. */
const MAX_VALUE = 8192;
/** RFC 8707 2: `resource` may be repeated; its values are kept joined by a space (the forms carry them so). */
const REPEATABLE = new Set(['resource']);

/**
 * The request's parameters from the query string and the form body together. RFC 6749 §3.1: a
 * parameter must not appear more than once, so a repeated one (in one place or across both) is an
 * `invalid_request`, as is a value that is not a plain string; only `resource` may repeat (RFC 8707).
 * A NUL character or a value over 8 KiB is refused here too, before any database sees it
 * (PostgreSQL cannot store NUL in text). An empty value is no parameter at all, here and so at every
 * endpoint that reads its parameters through this.
 */
export function readParams(req: Request): Params {
  const out: Params = Object.create(null);
  const add = (source: unknown) => {
    if (!source || typeof source !== 'object') return;
    for (const [key, given] of Object.entries(source as Record<string, unknown>)) {
      const repeatable = REPEATABLE.has(key);
      for (const value of repeatable && Array.isArray(given) ? given : [given]) {
        if (typeof value !== 'string') throw oauthError('invalid_request', `parameter ${key} is repeated or malformed`);
        // RFC 6749 §3.1: a parameter sent without a value is treated as omitted (docs/decisions.md "Empty
        // parameters"). Dovecot sends `client_id=&client_secret=` beside its Basic credentials.
        if (value === '') continue;
        if (key in out && !repeatable) throw oauthError('invalid_request', `parameter ${key} is repeated`);
        if (value.includes('\0')) throw oauthError('invalid_request', `parameter ${key} holds a NUL character`);
        if (value.length > MAX_VALUE) throw oauthError('invalid_request', `parameter ${key} is too long`);
        out[key] = key in out ? `${out[key]} ${value}` : value;
      }
    }
  };
  add(req.query);
  // Only the form parser sets a body on these routes; GETs skip the Content-Type check.
  if (req.body !== undefined && req.is('application/x-www-form-urlencoded')) add(req.body);
  return out;
}
