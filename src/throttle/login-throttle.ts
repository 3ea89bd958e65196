import type { Config } from '../config/schema.ts';
import type { Db } from '../db/connect.ts';
import { num } from '../db/rows.ts';

/** `failures`: the user has a failure count that a success must clear. */
export type ThrottleVerdict = { blocked: false; failures: boolean } | { blocked: true; retryAfter: number };

/**
 * Brute-force throttling (SPEC 7), kept in the database so every process behind the load balancer
 * sees the same counts. Per user: after `userFreeFailures` consecutive failures each further attempt
 * waits 1 s, 2 s, 4 s … up to `userMaxDelay`. Per address: `addressMaxFailures` failures within
 * `addressWindow` block the address for `addressBlock`. Only wrong credentials count: an outage of a
 * backend never does.
 */
export const loginThrottle = (db: Db, policy: Config['throttle']) => {
  const userKey = (username: string) => `u:${username.toLowerCase()}`;
  const addressKey = (ip: string) => `a:${ip}`;

  async function read(key: string) {
    const row = await db('login_throttle').where({ key }).first();
    return row
      ? { failures: num(row.failures), windowStart: num(row.window_start), blockedUntil: num(row.blocked_until) }
      : undefined;
  }

  async function write(key: string, failures: number, windowStart: number, blockedUntil: number) {
    await db('login_throttle')
      .insert({ key, failures, window_start: windowStart, blocked_until: blockedUntil })
      .onConflict('key')
      .merge();
  }

  return {
    async check(username: string, ip: string): Promise<ThrottleVerdict> {
      const now = Date.now();
      const key = userKey(username);
      const rows = await db('login_throttle').whereIn('key', [key, addressKey(ip)]).select('key', 'blocked_until');
      const until = Math.max(0, ...rows.map((r) => num(r.blocked_until)));
      if (until > now) return { blocked: true, retryAfter: Math.ceil((until - now) / 1000) };
      return { blocked: false, failures: rows.some((r) => r.key === key) };
    },

    async fail(username: string, ip: string): Promise<void> {
      const now = Date.now();
      const user = await read(userKey(username));
      const failures = (user?.failures ?? 0) + 1;
      const over = failures - policy.userFreeFailures;
      const delay = over >= 0 ? Math.min(policy.userBaseDelay * 2 ** over, policy.userMaxDelay) * 1000 : 0;
      await write(userKey(username), failures, user?.windowStart ?? now, delay ? now + delay : 0);

      const addr = await read(addressKey(ip));
      const fresh = !addr || now - addr.windowStart > policy.addressWindow * 1000;
      const count = fresh ? 1 : addr.failures + 1;
      const blockedUntil = count >= policy.addressMaxFailures ? now + policy.addressBlock * 1000 : (addr?.blockedUntil ?? 0);
      await write(addressKey(ip), count, fresh ? now : addr.windowStart, blockedUntil);
    },

    /** Clears the user's failures; skips the write when the check saw none (the common case). */
    async succeed(username: string, verdict: ThrottleVerdict): Promise<void> {
      if (!verdict.blocked && !verdict.failures) return;
      await db('login_throttle').where({ key: userKey(username) }).delete();
    },
  };
};

export type LoginThrottle = ReturnType<typeof loginThrottle>;
