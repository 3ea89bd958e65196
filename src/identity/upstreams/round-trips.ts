import { clock } from '../../clock.ts';
import { decrypt, encrypt } from '../../crypto/secrets.ts';
import { hashToken, randomToken } from '../../crypto/tokens.ts';
import type { RoundTripQueries } from './round-trip-queries.ts';

/** How long a browser may take at the upstream. */
export const ROUND_TRIP_TTL_MS = 10 * 60 * 1000;

/** What a sign-in at an upstream keeps until the callback: the strategy's state and where to go back. */
export interface RoundTrip {
  /** The passport strategy's state (PKCE verifier, `state`, `nonce`, `max_age`). */
  strategyState: Record<string, unknown>;
  /** The original request, continued after the callback: the authorize request, the account or device page. */
  resume: string;
  clientId: string;
}

/**
 * The round trip to an upstream, bound to the browser that started it and used once: the browser gets
 * a random value (its cookie), the server keeps the state under that value's hash, encrypted (the
 * PKCE verifier is a secret), and the callback's take deletes it, so a replayed or forged `state`
 * finds nothing.
 */
export function upstreamRoundTrips(queries: RoundTripQueries, key: Buffer) {
  return {
    /** Keeps `trip` for the upstream `upstreamId`; the value for the browser's cookie. */
    async start(upstreamId: string, trip: RoundTrip): Promise<string> {
      const token = randomToken();
      await queries.insert(hashToken(token), upstreamId, encrypt(key, JSON.stringify(trip)), clock.now() + ROUND_TRIP_TTL_MS);
      return token;
    },
    /** The round trip of this browser's cookie to `upstreamId`, taken now; undefined when there is none. */
    async take(token: string | undefined, upstreamId: string): Promise<RoundTrip | undefined> {
      if (!token) return undefined;
      const data = await queries.take(hashToken(token), upstreamId, clock.now());
      return data === undefined ? undefined : (JSON.parse(decrypt(key, data)) as RoundTrip);
    },
  };
}

export type UpstreamRoundTrips = ReturnType<typeof upstreamRoundTrips>;
