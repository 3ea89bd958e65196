import type { Request } from 'express';
import { oauthError } from '../errors/oauth.ts';
import { isResourceUri } from '../clients/resource.ts';

export type Params = Record<string, string>;

/** Longer than any legitimate value (a redirect URI, a state, an id_token_hint) ever is. */
const MAX_VALUE = 8192;

/**
 * The request's parameters from the query string and the form body together. RFC 6749 §3.1: a
 * parameter must not appear more than once, so a repeated one (in one place or across both) is an
 * `invalid_request`, as is a value that is not a plain string. A NUL character or a value over 8 KiB
 * is refused here too, before any database sees it (PostgreSQL cannot store NUL in text).
 */
export function readParams(req: Request): Params {
  const out: Params = Object.create(null);
  const add = (source: unknown) => {
    if (!source || typeof source !== 'object') return;
    for (const [key, value] of Object.entries(source as Record<string, unknown>)) {
      if (typeof value !== 'string') throw oauthError('invalid_request', `parameter ${key} is repeated or malformed`);
      if (key in out) throw oauthError('invalid_request', `parameter ${key} is repeated`);
      if (value.includes('\0')) throw oauthError('invalid_request', `parameter ${key} holds a NUL character`);
      if (value.length > MAX_VALUE) throw oauthError('invalid_request', `parameter ${key} is too long`);
      out[key] = value;
    }
  };
  add(req.query);
  // Only the form parser sets a body on these routes; GETs skip the Content-Type check.
  if (req.body !== undefined && req.is('application/x-www-form-urlencoded')) add(req.body);
  return out;
}

/** A parameter's value, with an empty value read as absent. */
export const param = (p: Params, name: string): string | undefined => {
  const v = p[name];
  return v === undefined || v === '' ? undefined : v;
};

/** RFC 8707 `resource`: absent, or an absolute URI without fragment; anything else is `invalid_target`. */
export function resourceParam(p: Params): string | undefined {
  const resource = param(p, 'resource');
  if (resource !== undefined && !isResourceUri(resource)) throw oauthError('invalid_target', 'resource must be an absolute URI without a fragment');
  return resource;
}
