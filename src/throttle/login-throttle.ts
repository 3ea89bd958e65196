import type { Config } from '../config/schema.ts';
import type { ThrottleQueries } from './throttle-queries.ts';
import type { Ladder, KeyOutcome } from './model.ts';
import { addressOf } from './address.ts';
import { type Place, SlotWaiters } from './slot-waiters.ts';
import { clock } from '../clock.ts';

type Policy = Config['throttle'];

/**
 * Where an attempt comes from, which decides the count that can delay it (docs/decisions.md, "Guessers cannot
 * lock an owner out"): a browser holding a device cookie of the account counts on its own; a browser
 * without one shares the account's count with every failure from anywhere (OWASP's untrusted
 * devices); a confidential client, authenticated by its secret, has its own count per account; a
 * public client (`admin-cli`) one per account and address.
 */
export type Lane = { kind: 'browser'; device?: string } | { kind: 'confidential'; clientId: string } | { kind: 'public' };

/**
 * `busy`: no slot came free within `slotWait` (attempts in flight hold them all), which says nothing
 * about failures: a load refusal, answered as one (docs/security.md), never as "too many failed attempts".
 */
export type Reservation = { blocked: true; retryAfter: number; busy?: true } | { blocked: false; release: Release };

/** What happens to a reserved attempt once the password was checked. */
export interface Release {
  /** The right password: the lane's and the account's delays cleared. */
  succeeded(): Promise<void>;
  /** A wrong password: counted on the lane, the account, its total and the address. */
  failed(): Promise<void>;
  /** Neither (an outage, a second factor still to come): nothing is counted. */
  inconclusive(): Promise<void>;
}

/** No slot came free in time: retried after a second. */
const BUSY = { blocked: true, retryAfter: 1, busy: true } as const;

/** A reserved attempt is checked within this; a process that dies holding slots frees them when it runs out. */
const LEASE_MS = 60_000;

/**
 * Brute-force throttling (docs/decisions.md), kept in the database so every process sees the same counts.
 *
 * Only failures count. An attempt takes a slot on each key that gates it *before* the password is
 * checked (one atomic upsert per key, throttle-queries.ts): failures plus attempts in flight stay
 * under the free count, and past it one attempt at a time is checked, each failure doubling the
 * delay. So however many guesses arrive at once, in however many processes, no more than the policy
 * allows are checked, while right passwords arriving at once only wait a moment for a slot (at most
 * `slotWait`) and are never refused for the load.
 *
 * Keys: `a:` the address (IPv6 per /64): `addressMaxFailures` within `addressWindow` block it;
 * `u:` the account, every failure from anywhere, which gates browsers without a device cookie; `d:`
 * a device, `c:` a confidential client on the account, `p:` a public client on the account from one
 * address; `t:` the account's total, a hard cap (`accountMaxFailures` per `userWindow`) on what the
 * lanes anyone can open (`u:`, `p:`) may check together. The lanes that need a secret to open (a
 * device cookie, a client secret) are bounded by their own ladders, so a guesser with many
 * addresses cannot lock them out. A success clears the lane and the account's ladder, never the total.
 */
export const loginThrottle = (queries: ThrottleQueries, policy: Policy) => {
  const user: Ladder = {
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
  // The total is closed for the rest of its window by the failure that reaches the cap.
  const total: Ladder = {
    free: policy.accountMaxFailures,
    baseMs: policy.userWindow * 1000,
    maxMs: policy.userWindow * 1000,
    windowMs: policy.userWindow * 1000,
  };
  const waiters = new SlotWaiters();
  /**
   * Slots this process holds, by key: each its lease's end, as in the database (an attempt left at its
   * second factor may never be ended). When they alone fill a key's free count, the database can only
   * refuse the next attempt on it, so the attempt waits for one of them to end (woken at once) without
   * asking: under a burst of right passwords on one account, asking meant every waiting attempt
   * rewriting the account's and the address's rows every few milliseconds, in the way of the attempts
   * being checked. The database still decides every slot actually taken.
   */
  const mine = new Map<string, number[]>();
  const holding = (key: string): number => {
    const leases = mine.get(key);
    if (!leases) return 0;
    const now = performance.now();
    const live = leases.filter((until) => until > now);
    if (live.length === 0) mine.delete(key);
    else if (live.length < leases.length) mine.set(key, live);
    return live.length;
  };
  let holds = 0;
  const hold = (keys: string[], until: number) => {
    // A hold whose attempt never ended (an exception before its release) expires with its lease, but
    // its key may never be asked about again: now and then every key is swept.
    if (++holds % 1024 === 0) for (const key of [...mine.keys()]) holding(key);
    for (const key of keys) mine.set(key, [...(mine.get(key) ?? []), until]);
  };
  const letGo = (keys: string[], until: number) => {
    for (const key of keys) {
      const leases = mine.get(key)?.filter((_u, i, all) => i !== all.indexOf(until));
      if (leases?.length) mine.set(key, leases);
      else mine.delete(key);
    }
  };

  return {
    /**
     * Guesses of something else than a password from one address (wrong device user codes, RFC 8628
     * §5.1): they count on the address key alone, under the same limit as wrong passwords.
     */
    guesses: {
      /** Seconds until the address may guess again; 0 when it may now. */
      async retryAfter(ip: string): Promise<number> {
        const now = clock.now();
        const until = await queries.blockedUntil(`a:${addressOf(ip)}`, address, now);
        return until > now ? Math.ceil((until - now) / 1000) : 0;
      },
      async failed(ip: string): Promise<void> {
        await queries.endAttempt([{ key: `a:${addressOf(ip)}`, outcome: 'failed', ladder: address, held: false }], clock.now());
      },
    },

    /**
     * Reserves one attempt on `account` (the keyed hash of the normalised name, account-key.ts) from
     * `ip` through `lane`, before the password is checked; waits up to `slotWait` for a slot that
     * attempts in flight hold, and refuses at once while a delay runs.
     */
    async reserve(account: string, ip: string, lane: Lane): Promise<Reservation> {
      const net = addressOf(ip);
      const addressKey = `a:${net}`;
      const userKey = `u:${account}`;
      const totalKey = `t:${account}`;
      const laneKey =
        lane.kind === 'confidential'
          ? `c:${lane.clientId}:${account}`
          : lane.kind === 'public'
            ? `p:${account}:${net}`
            : lane.device
              ? `d:${lane.device}`
              : userKey;
      // The lanes anyone can open are capped by the account's total; the others only count into it.
      const openToAll = lane.kind === 'public' || (lane.kind === 'browser' && !lane.device);
      const gates: Array<[string, Ladder]> = [
        [addressKey, address],
        [laneKey, user],
        ...(openToAll ? [[totalKey, total] as [string, Ladder]] : []),
      ];
      const keys = gates.map(([key]) => key);
      let lease = 0;

      // Waiting is measured in real time: the policy's clock may be moved (tests freeze it).
      const deadline = performance.now() + policy.slotWait * 1000;
      // This attempt's place in a line (slot-waiters.ts), from its first wait until it has its slots or
      // is answered: only the first in line asks, so waiters go in the order they came.
      let place: Place | undefined;
      const delayed = (until: number, now: number): Reservation | undefined =>
        until > now ? { blocked: true, retryAfter: Math.ceil((until - now) / 1000) } : undefined;
      // Out of time: busy, unless a delay started on one of its keys meanwhile (that answer is the delay).
      const giveUp = async (): Promise<Reservation> => {
        const now = clock.now();
        return delayed(await queries.delayedUntil(gates, now), now) ?? BUSY;
      };
      try {
        for (let pause = 5; ; ) {
          if (!place) {
            const queued = keys.find((key) => waiters.waiting(key));
            if (queued) {
              place = waiters.join(queued);
              // A delay running on any of its keys is answered at once, not after the wait in line.
              const now = clock.now();
              const answer = delayed(await queries.delayedUntil(gates, now), now);
              if (answer) return answer;
            }
          }
          if (place && !place.first) {
            const left = deadline - performance.now();
            if (left <= 0) return giveUp();
            await place.wait(left);
            continue;
          }
          // When this process's own attempts fill a key's free count, the database could only refuse:
          // it is not asked (the note on `mine`), but a delay running on the attempt's keys is read.
          const full = gates.find(([key, ladder]) => holding(key) >= ladder.free);
          const now = clock.now();
          let refusedKey: string | undefined;
          let until: number;
          if (full) {
            refusedKey = full[0];
            until = await queries.delayedUntil(gates, now);
          } else {
            const asked = performance.now();
            const refused = await queries.reserveAll(gates, now, now + LEASE_MS);
            if (refused === undefined) {
              // The database's lease runs from before it was asked; this one ends a second before that,
              // so this process never waits on a slot the database has freed.
              lease = asked + LEASE_MS - 1000;
              hold(keys, lease);
              break;
            }
            until = refused.blockedUntil;
            if (refused.gate !== undefined) {
              // On PostgreSQL the slots taken before the refusal were given back: a waiter here may take them.
              for (const [key] of gates.slice(0, refused.gate)) waiters.wake(key);
              refusedKey = gates[refused.gate]![0];
            }
          }
          // A delay running on any of its keys is answered at once, with its length.
          const answer = delayed(until, now);
          if (answer) return answer;
          // Busy: attempts in flight hold every slot of a key. Wait in its line for one (woken at once
          // when it is freed in this process, polled for the others), but never past `slotWait`.
          const left = deadline - performance.now();
          if (left <= 0) return BUSY; // the delays were read just now
          if (refusedKey === undefined) continue; // a slot was freed since the refusal: ask again
          if (place) place.standIn(refusedKey);
          else place = waiters.join(refusedKey);
          if (!place.first) continue;
          await place.wait(Math.min(pause, left));
          pause = Math.min(pause * 2, 200);
        }
      } finally {
        // Answered or given its slots, or a fault: either way out of the line, the next one first.
        place?.leave();
      }

      let ended = false;
      const end = async (outcomes: KeyOutcome[]) => {
        try {
          await queries.endAttempt(outcomes, clock.now());
        } finally {
          if (!ended) letGo(keys, lease);
          ended = true;
          for (const key of keys) waiters.wake(key);
        }
      };
      return {
        blocked: false,
        release: {
          succeeded: () =>
            end([
              { key: addressKey, outcome: 'released' },
              { key: laneKey, outcome: 'cleared', held: true },
              ...(laneKey !== userKey ? [{ key: userKey, outcome: 'cleared' as const, held: false }] : []),
              ...(openToAll ? [{ key: totalKey, outcome: 'released' as const }] : []),
            ]),
          failed: () =>
            end([
              { key: addressKey, outcome: 'failed', ladder: address, held: true },
              { key: laneKey, outcome: 'failed', ladder: user, held: true },
              ...(laneKey !== userKey ? [{ key: userKey, outcome: 'failed' as const, ladder: user, held: false }] : []),
              { key: totalKey, outcome: 'failed', ladder: total, held: openToAll },
            ]),
          inconclusive: () => end(gates.map(([key]) => ({ key, outcome: 'released' as const }))),
        },
      };
    },
  };
};

export type LoginThrottle = ReturnType<typeof loginThrottle>;
