import type { Db } from '../db/connect.ts';
import { fastOf, statement, type Statement } from '../db/fast.ts';
import { num } from '../db/rows.ts';

/** A delay ladder: how long a key waits after its `n`-th counted failure within a window. */
export interface Ladder {
  /** Failures within the window before any delay. */
  free: number;
  /** Delay after failure number `free`, doubling with each further one. */
  baseMs: number;
  maxMs: number;
  windowMs: number;
}

export const delayMs = (n: number, l: Ladder): number => (n < l.free ? 0 : Math.min(l.baseMs * 2 ** (n - l.free), l.maxMs));

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

/**
 * One upsert that counts an attempt and sets the key's next delay, refusing (no row returned) while
 * the key is blocked; a window that has run out starts the count afresh. Atomic on SQLite and
 * PostgreSQL alike, so concurrent attempts in any number of processes cannot overtake each other.
 */
function countSql(l: Ladder): string {
  const expired = 'login_throttle.window_start <= CAST(:expiredBefore AS BIGINT)';
  const next = `(CASE WHEN ${expired} THEN 1 ELSE login_throttle.failures + 1 END)`;
  const delay = delaySql(next, l);
  return `INSERT INTO login_throttle (key, failures, window_start, blocked_until)
VALUES (:key, 1, CAST(:now AS BIGINT), CAST(:firstBlock AS BIGINT))
ON CONFLICT (key) DO UPDATE SET
  failures = ${next},
  window_start = CASE WHEN ${expired} THEN CAST(:now AS BIGINT) ELSE login_throttle.window_start END,
  blocked_until = CASE WHEN ${delay} = 0 THEN 0 ELSE CAST(:now AS BIGINT) + ${delay} END
WHERE login_throttle.blocked_until <= CAST(:now AS BIGINT) OR ${expired}
RETURNING failures`;
}

/** A statement written with `:name` placeholders, turned positional once: the statement and the names' order. */
function named(sql: string): { stmt: Statement; order: string[] } {
  const order: string[] = [];
  return { stmt: statement(sql.replace(/:(\w+)/g, (_m, name: string) => (order.push(name), '?'))), order };
}

const sql = {
  blockedUntil: (n: number) => statement(`select blocked_until from login_throttle where key in (${Array(n).fill('?').join(', ')})`),
  uncount: statement('update login_throttle set failures = failures - 1, blocked_until = CASE WHEN failures - 1 < ? THEN 0 ELSE blocked_until END where key = ? and failures > 0'),
  clear: (n: number) => statement(`delete from login_throttle where key in (${Array(n).fill('?').join(', ')})`),
};

export const throttleQueries = (db: Db) => {
  const fast = fastOf(db);
  const counts = new Map<Ladder, ReturnType<typeof named>>();
  const byArity = { blockedUntil: new Map<number, Statement>(), clear: new Map<number, Statement>() };
  const forKeys = (kind: 'blockedUntil' | 'clear', n: number) => {
    let stmt = byArity[kind].get(n);
    if (!stmt) byArity[kind].set(n, (stmt = sql[kind](n)));
    return stmt;
  };
  return {
    /** Counts one attempt under `key`; false when the key is blocked (nothing is counted then). */
    async count(key: string, l: Ladder, now: number): Promise<boolean> {
      let counter = counts.get(l);
      if (!counter) counts.set(l, (counter = named(countSql(l))));
      const firstBlock = delayMs(1, l) ? now + delayMs(1, l) : 0;
      const values: Record<string, unknown> = { key, now, firstBlock, expiredBefore: now - l.windowMs };
      return (await fast.run(counter.stmt, counter.order.map((n) => values[n]))) > 0;
    },

    /** The latest time any of `keys` is blocked until (0 when none is). */
    async blockedUntil(keys: string[]): Promise<number> {
      const rows = await fast.all(forKeys('blockedUntil', keys.length), keys);
      return Math.max(0, ...rows.map((r) => num(r.blocked_until)));
    },

    /** Takes back one counted attempt; lifts a delay the count no longer reaches. */
    async uncount(key: string, l: Ladder): Promise<void> {
      await fast.run(sql.uncount, [l.free, key]);
    },

    /**
     * A success: the account's (and device's) keys cleared and the address given its attempt back, in
     * one write that shares the group commit of concurrent requests.
     */
    async settleSuccess(clearKeys: string[], addressKey: string, address: Ladder): Promise<void> {
      await fast.commit([
        { stmt: forKeys('clear', clearKeys.length), params: clearKeys },
        { stmt: sql.uncount, params: [address.free, addressKey] },
      ]);
    },
  };
};

export type ThrottleQueries = ReturnType<typeof throttleQueries>;
