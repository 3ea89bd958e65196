import type { Config } from '../config/schema.ts';
import { clock } from '../clock.ts';
import { addressOf } from './address.ts';
import type { ThrottleQueries } from './throttle-queries.ts';
import { flatLadder } from './model.ts';

/**
 * WebAuthn options handed out per address (`POST /passkey/options`): each one stores a challenge, so
 * a loop of requests from one network is cut off at `passkeyMaxOptions` within `addressWindow`, for
 * `addressBlock`, as upstream starts are (upstream-starts.ts). Every request counts, a right passkey
 * forgives none; the limit is set well above what people behind one NAT do. A request is counted
 * first and then compared, so requests arriving at once, in any number of processes, can refuse more
 * than the limit but never let more through.
 */
export const passkeyOptionLimit = (queries: ThrottleQueries, policy: Config['throttle']) => {
  const ladder = flatLadder(policy.passkeyMaxOptions, policy.addressBlock * 1000, policy.addressWindow * 1000);
  const waitFrom = (until: number, now: number) => Math.max(1, Math.ceil((until - now) / 1000));
  return {
    /** Counts a request from `ip` and answers 0, or answers the seconds to wait while the address is cut off. */
    async take(ip: string): Promise<number> {
      const key = `w:${addressOf(ip)}`;
      const now = clock.now();
      const until = await queries.blockedUntil(key, ladder, now);
      if (until > now) return waitFrom(until, now);
      await queries.endAttempt([{ key, outcome: 'failed', ladder, held: false }], now);
      if ((await queries.failures(key, ladder, now)) <= ladder.free) return 0;
      return waitFrom(Math.max(await queries.blockedUntil(key, ladder, now), now + 1000), now);
    },
  };
};

export type PasskeyOptionLimit = ReturnType<typeof passkeyOptionLimit>;
