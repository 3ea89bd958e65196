import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { addressOf } from '../throttle/address.ts';
import type { ThrottleQueries } from '../throttle/throttle-queries.ts';
import { flatLadder, type Ladder } from '../throttle/model.ts';

/**
 * Reset requests counted per account and per address (docs/password-reset-by-mail.md), in the brute-force policy's table so
 * every process sees the same counts. Each request is counted first and then compared, so requests
 * arriving at once cannot all slip under the limit. Over the limit a request still gets the usual
 * answer; it just sends no mail.
 */
export function requestLimits(queries: ThrottleQueries, policy: Config['passwordReset']) {
  const windowMs = policy.window * 1000;
  const account = flatLadder(policy.accountLimit, windowMs, windowMs);
  const address = flatLadder(policy.addressLimit, windowMs, windowMs);

  async function count(key: string, l: Ladder): Promise<boolean> {
    const now = clock.now();
    await queries.endAttempt([{ key, outcome: 'failed', ladder: l, held: false }], now);
    return (await queries.failures(key, l, now)) <= l.free;
  }

  // One count at a time per key in this process: requests run after their answers, so several of one
  // account overlap, and counting all before reading any would refuse even those under the limit.
  // Between processes the same overlap can only refuse more, never send past the limit.
  const queue = new Map<string, Promise<boolean>>();
  function within(key: string, l: Ladder): Promise<boolean> {
    const next = (queue.get(key) ?? Promise.resolve(true)).catch(() => true).then(() => count(key, l));
    queue.set(key, next);
    void next.finally(() => queue.get(key) === next && queue.delete(key)).catch(() => undefined);
    return next;
  }

  return {
    /** Counts a request from `ip`; false when the address made too many lately. */
    address: (ip: string) => within(`r:a:${addressOf(ip)}`, address),
    /** Counts a mail to the account; false when it was sent too many lately. */
    account: (userId: string) => within(`r:u:${userId}`, account),
  };
}
