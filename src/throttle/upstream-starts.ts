import type { Config } from '../config/schema.ts';
import { clock } from '../clock.ts';
import { addressOf } from './address.ts';
import type { ThrottleQueries } from './throttle-queries.ts';
import { flatLadder } from './model.ts';

/**
 * Round trips to upstream identity providers started per address (docs/upstream-identity-providers.md): each start writes a row
 * and may read the upstream's metadata, so a loop of `?idp=` requests from one network is cut off
 * at `upstreamMaxStarts` within `addressWindow`, for `addressBlock`. Every start counts (it is not a
 * failure that a success would forgive); the limit is set well above what people behind one NAT do.
 */
export const upstreamStarts = (queries: ThrottleQueries, policy: Config['throttle']) => {
  const ladder = flatLadder(policy.upstreamMaxStarts, policy.addressBlock * 1000, policy.addressWindow * 1000);
  return {
    /** Counts a start from `ip` and answers 0, or answers the seconds to wait while the address is cut off. */
    async start(ip: string): Promise<number> {
      const key = `s:${addressOf(ip)}`;
      const now = clock.now();
      const until = await queries.blockedUntil(key, ladder, now);
      if (until > now) return Math.ceil((until - now) / 1000);
      await queries.endAttempt([{ key, outcome: 'failed', ladder, held: false }], now);
      return 0;
    },
  };
};

export type UpstreamStarts = ReturnType<typeof upstreamStarts>;
