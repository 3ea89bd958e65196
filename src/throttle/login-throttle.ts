import type { Config } from '../config/schema.ts';
import type { Db } from '../db/connect.ts';
import { num } from '../db/rows.ts';

type Policy = Config['throttle'];

/** A delay ladder: the number of milliseconds to wait after the `n`-th counted failure. */
interface Ladder {
  /** Failures within the window before any delay. */
  free: number;
  /** Delay after failure number `free`, doubling with each further one. */
  baseMs: number;
  maxMs: number;
  windowMs: number;
}

/**
 * The delay after the n-th failure as SQL, so that counting and blocking are one statement: a CASE
 * ladder (1 s, 2 s, 4 s … capped), since SQLite has no portable pow(). Every number comes from the
 * validated config, never from a request.
 */
function delaySql(n: string, l: Ladder): string {
  const steps: string[] = [];
  for (let k = l.free, d = l.baseMs; d < l.maxMs && steps.length < 64; k++, d *= 2) steps.push(`WHEN ${k} THEN ${d}`);
  const ladder = steps.length > 0 ? `(CASE ${n} ${steps.join(' ')} ELSE ${l.maxMs} END)` : `${l.maxMs}`;
  return `(CASE WHEN ${n} < ${l.free} THEN 0 ELSE ${ladder} END)`;
}

const delayMs = (n: number, l: Ladder): number => (n < l.free ? 0 : Math.min(l.baseMs * 2 ** (n - l.free), l.maxMs));

const rowsOf = (result: unknown): Array<Record<string, unknown>> =>
  Array.isArray(result) ? result : ((result as { rows?: Array<Record<string, unknown>> }).rows ?? []);

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
 * while the key is blocked: however many guesses arrive at once, in however many processes, no more
 * than the policy allows are ever checked. Per account (`u:`): the first `userFreeFailures` failures
 * in `userWindow` are free, then each further attempt waits 1 s, 2 s, 4 s … up to `userMaxDelay`; a
 * browser with a device cookie for the account is counted under its own key (`d:`) instead. Per
 * address (`a:`): `addressMaxFailures` within `addressWindow` block it for `addressBlock`. Failures
 * older than their window stop counting; a success clears the account.
 */
export const loginThrottle = (db: Db, policy: Policy) => {
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

  const upserts = new Map<Ladder, string>();
  const upsertSql = (l: Ladder) => {
    let sql = upserts.get(l);
    if (!sql) {
      const expired = 'login_throttle.window_start <= CAST(:expiredBefore AS BIGINT)';
      const next = `(CASE WHEN ${expired} THEN 1 ELSE login_throttle.failures + 1 END)`;
      const delay = delaySql(next, l);
      sql = `INSERT INTO login_throttle (key, failures, window_start, blocked_until)
VALUES (:key, 1, CAST(:now AS BIGINT), CAST(:firstBlock AS BIGINT))
ON CONFLICT (key) DO UPDATE SET
  failures = ${next},
  window_start = CASE WHEN ${expired} THEN CAST(:now AS BIGINT) ELSE login_throttle.window_start END,
  blocked_until = CASE WHEN ${delay} = 0 THEN 0 ELSE CAST(:now AS BIGINT) + ${delay} END
WHERE login_throttle.blocked_until <= CAST(:now AS BIGINT) OR ${expired}
RETURNING failures`;
      upserts.set(l, sql);
    }
    return sql;
  };

  /** Counts one attempt under `key`; false when the key is blocked (nothing is counted then). */
  async function count(key: string, l: Ladder, now: number): Promise<boolean> {
    const firstBlock = delayMs(1, l) ? now + delayMs(1, l) : 0;
    const result = await db.raw(upsertSql(l), { key, now, firstBlock, expiredBefore: now - l.windowMs });
    return rowsOf(result).length > 0;
  }

  async function retryAfter(keys: string[], now: number): Promise<number> {
    const rows = await db('login_throttle').whereIn('key', keys).select('blocked_until');
    const until = Math.max(now + 1000, ...rows.map((r) => num(r.blocked_until)));
    return Math.ceil((until - now) / 1000);
  }

  /** Takes back one counted attempt; lifts a delay the count no longer reaches. */
  async function uncount(key: string, l: Ladder): Promise<void> {
    await db('login_throttle')
      .where({ key })
      .andWhere('failures', '>', 0)
      .update({
        failures: db.raw('failures - 1'),
        blocked_until: db.raw('CASE WHEN failures - 1 < ? THEN 0 ELSE blocked_until END', [l.free]),
      });
  }

  return {
    /**
     * Reserves one attempt for the account (or its device) from the address, before the password is
     * checked. `accountKey` is the keyed hash of the normalised name (see account-key.ts).
     */
    async reserve(accountKey: string, ip: string, device?: string): Promise<Reservation> {
      const now = Date.now();
      const addressKey = `a:${ip}`;
      const userKey = device ? `d:${device}` : `u:${accountKey}`;
      if (!(await count(addressKey, address, now))) return { blocked: true, retryAfter: await retryAfter([addressKey], now) };
      if (!(await count(userKey, account, now))) {
        await uncount(addressKey, address);
        return { blocked: true, retryAfter: await retryAfter([userKey], now) };
      }
      return {
        blocked: false,
        release: {
          async succeeded() {
            await db('login_throttle').whereIn('key', [`u:${accountKey}`, userKey]).delete();
            await uncount(addressKey, address);
          },
          async failed() {},
          async refund() {
            await uncount(userKey, account);
            await uncount(addressKey, address);
          },
        },
      };
    },
  };
};

export type LoginThrottle = ReturnType<typeof loginThrottle>;
