import { createRemoteJWKSet, customFetch, errors, type JWTVerifyGetKey } from 'jose';
import { clock } from '../clock.ts';
import type { AddressRules } from '../outbound/address-rules.ts';
import { asFetch } from '../outbound/as-fetch.ts';
import { findOutboundError } from '../outbound/outbound-error.ts';

/** A key set is a few keys: docs/decisions.md caps the answer, so a jwksUri cannot make the server read 600 MiB. */
const JWKS_MAX_BYTES = 64 * 1024;
/** A jwksUri that does not answer within this fails the request, not hangs it. */
const JWKS_TIMEOUT_MS = 2000;
/** After a failed fetch the client's assertions are refused this long without another fetch (docs/decisions.md). */
const FAILED_FETCH_PAUSE_MS = 30_000;

/** The key set could not be read: no answer in time, not a key set, an error status, or our outbound rules. */
const fetchFailed = (err: unknown): boolean =>
  err instanceof errors.JWKSTimeout ||
  err instanceof errors.JWKSInvalid ||
  findOutboundError(err) !== undefined ||
  (err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC');

/** The client's jwksUri could not be read lately: refused without fetching. */
export class KeyFetchPaused extends Error {
  override readonly name = 'KeyFetchPaused';
}

/**
 * The key sets of clients that registered a `jwksUri` (private_key_jwt), for one server. One jose
 * remote set per URL, so its cache (keys kept 10 minutes, an unknown `kid` refetched at most every
 * 30 s) is shared by every request of every client using that URL; fetched through the outbound
 * rules, capped at 64 KiB. A failed fetch (no answer, an error status, too large, not a key set, a
 * refused address) is remembered per client for 30 s: an unauthenticated token request naming the
 * client cannot make the server fetch again and again.
 */
export function remoteKeySets(rules: AddressRules) {
  const sets = new Map<string, JWTVerifyGetKey>();
  const failedAt = new Map<string, number>();
  const fetchJwks = asFetch(rules, { maxBytes: JWKS_MAX_BYTES, timeoutMs: JWKS_TIMEOUT_MS });

  const setFor = (uri: string): JWTVerifyGetKey => {
    let set = sets.get(uri);
    if (!set) {
      if (sets.size > 1000) sets.clear();
      set = createRemoteJWKSet(new URL(uri), {
        timeoutDuration: JWKS_TIMEOUT_MS,
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
        [customFetch]: fetchJwks,
      });
      sets.set(uri, set);
    }
    return set;
  };

  return {
    /** The key lookup of a client's assertions: one that fails at once while a failed fetch is fresh. */
    keysOf(clientId: string, jwksUri: string): JWTVerifyGetKey {
      const failed = failedAt.get(clientId);
      if (failed !== undefined && clock.now() - failed < FAILED_FETCH_PAUSE_MS) {
        const ago = Math.ceil((clock.now() - failed) / 1000);
        return async () => {
          throw new KeyFetchPaused(`its jwksUri failed ${ago} s ago: not fetched again within 30 s`);
        };
      }
      failedAt.delete(clientId);
      const set = setFor(jwksUri);
      return async (header, token) => {
        try {
          return await set(header, token);
        } catch (err) {
          // Only a failed fetch pauses the client: a kid with no key, or a key that cannot be used, is
          // the assertion's fault, and must not let anyone lock the client out for 30 s.
          if (fetchFailed(err)) {
            if (failedAt.size > 10_000) failedAt.clear();
            failedAt.set(clientId, clock.now());
          }
          throw err;
        }
      };
    },
  };
}

export type RemoteKeySets = ReturnType<typeof remoteKeySets>;
