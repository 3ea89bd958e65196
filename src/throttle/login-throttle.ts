import type { Config } from '../config/schema.ts';
import type { Ladder, ThrottleQueries } from './throttle-queries.ts';
import { clock } from '../clock.ts';

type Policy = Config['throttle'];

export type Reservation = { blocked: true; retryAfter: number } | { blocked: false; release: Release };

/** What happens to a reserved attempt once the password was checked. */
export interface Release {
  /** The right password: the account's (and the device's) count is cleared, the address refunded. */
  succeeded(): Promise<void>;
  /** A wrong password: it stays counted. */
  failed(): Promise<void>;
  /** The backend could not answer: an outage is never a failed login, so the attempt is refunded. */
  refund(): Promise<void>;
}

/**
 * Brute-force throttling (SPEC 7), kept in the database so every process sees the same counts.
 *
 * An attempt is counted *before* the password is checked, by one atomic upsert per key that refuses
 * while the key is blocked (throttle-queries.ts): however many guesses arrive at once, in however many processes, no more
 * than the policy allows are ever checked. Per account (`u:`): the first `userFreeFailures` failures
 * in `userWindow` are free, then each further attempt waits 1 s, 2 s, 4 s … up to `userMaxDelay`; a
 * browser with a device cookie for the account is counted under its own key (`d:`) instead. Per
 * address (`a:`): `addressMaxFailures` within `addressWindow` block it for `addressBlock`. Failures
 * older than their window stop counting; a success clears the account.
 */
export const loginThrottle = (queries: ThrottleQueries, policy: Policy) => {
  const account: Ladder = {
    free: policy.userFreeFailures,
    baseMs: policy.userBaseDelay * 1000,
    maxMs: policy.userMaxDelay * 1000,
    windowMs: policy.userWindow * 1000,
  };
  // The address is blocked for `addressBlock` by the failure that reaches the limit.
  const address: Ladder = {
    free: policy.addressMaxFailures,
    baseMs: policy.addressBlock * 1000,
    maxMs: policy.addressBlock * 1000,
    windowMs: policy.addressWindow * 1000,
  };

  async function retryAfter(keys: string[], now: number): Promise<number> {
    return Math.ceil((Math.max(now + 1000, await queries.blockedUntil(keys)) - now) / 1000);
  }

  return {
    /**
     * Reserves one attempt for the account (or its device) from the address, before the password is
     * checked. `accountKey` is the keyed hash of the normalised name (see account-key.ts).
     */
    async reserve(accountKey: string, ip: string, device?: string): Promise<Reservation> {
      const now = clock.now();
      const addressKey = `a:${ip}`;
      const userKey = device ? `d:${device}` : `u:${accountKey}`;
      if (!(await queries.count(addressKey, address, now))) return { blocked: true, retryAfter: await retryAfter([addressKey], now) };
      if (!(await queries.count(userKey, account, now))) {
        await queries.uncount(addressKey, address);
        return { blocked: true, retryAfter: await retryAfter([userKey], now) };
      }
      return {
        blocked: false,
        release: {
          async succeeded() {
            await queries.settleSuccess([`u:${accountKey}`, userKey], addressKey, address);
          },
          async failed() {},
          async refund() {
            await queries.uncount(userKey, account);
            await queries.uncount(addressKey, address);
          },
        },
      };
    },
  };
};

export type LoginThrottle = ReturnType<typeof loginThrottle>;
