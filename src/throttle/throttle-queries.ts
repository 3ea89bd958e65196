import type { Database } from '../db/database.ts';
import { statement, type Statement, type Step } from '../db/statements.ts';
import { num } from '../db/rows.ts';
import { delayMs, type Ladder, type KeyOutcome } from './model.ts';

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

const EXPIRED = 'login_throttle.window_start <= CAST(:expiredBefore AS BIGINT)';
const FAILURES = `(CASE WHEN ${EXPIRED} THEN 0 ELSE login_throttle.failures END)`;
/** Attempts in flight whose lease still runs; a dead process's attempts stop counting when it ends. */
const INFLIGHT = '(CASE WHEN login_throttle.inflight_until > CAST(:now AS BIGINT) THEN login_throttle.inflight ELSE 0 END)';

/**
 * One upsert that takes a slot for an attempt about to be checked, refusing (no row returned) while
 * the key is delayed, or while its slots are taken: failures and attempts in flight together stay
 * under the free count, and past it one attempt at a time is checked. Only a failure counts (see
 * `failSql`), so right passwords arriving at once never add up to a delay. Atomic on SQLite and
 * PostgreSQL alike, so concurrent attempts in any number of processes cannot overtake each other.
 */
const reserveSql = `INSERT INTO login_throttle (key, failures, window_start, blocked_until, inflight, inflight_until)
VALUES (:key, 0, CAST(:now AS BIGINT), 0, 1, CAST(:leaseUntil AS BIGINT))
ON CONFLICT (key) DO UPDATE SET
  failures = ${FAILURES},
  window_start = CASE WHEN ${EXPIRED} THEN CAST(:now AS BIGINT) ELSE login_throttle.window_start END,
  blocked_until = CASE WHEN ${EXPIRED} THEN 0 ELSE login_throttle.blocked_until END,
  inflight = ${INFLIGHT} + 1,
  inflight_until = CAST(:leaseUntil AS BIGINT)
WHERE (login_throttle.blocked_until <= CAST(:now AS BIGINT) OR ${EXPIRED})
  AND (${FAILURES} + ${INFLIGHT} < CAST(:free AS INTEGER) OR ${INFLIGHT} = 0)
RETURNING failures`;

/** The slot given back (`:held` = 1) or none held (0). */
const LET_GO =
  'CASE WHEN login_throttle.inflight >= CAST(:held AS INTEGER) THEN login_throttle.inflight - CAST(:held AS INTEGER) ELSE 0 END';

/** A failure: counted within the window, the key's next delay set, its slot given back. */
function failSql(l: Ladder): string {
  const next = `(CASE WHEN ${EXPIRED} THEN 1 ELSE login_throttle.failures + 1 END)`;
  const delay = delaySql(next, l);
  return `INSERT INTO login_throttle (key, failures, window_start, blocked_until, inflight, inflight_until)
VALUES (:key, 1, CAST(:now AS BIGINT), CAST(:firstBlock AS BIGINT), 0, 0)
ON CONFLICT (key) DO UPDATE SET
  failures = ${next},
  window_start = CASE WHEN ${EXPIRED} THEN CAST(:now AS BIGINT) ELSE login_throttle.window_start END,
  blocked_until = CASE WHEN ${delay} = 0 THEN 0 ELSE CAST(:now AS BIGINT) + ${delay} END,
  inflight = ${LET_GO}`;
}

/** A success: the key's count cleared (a key without failures is left untouched, unlocked), its slot given back. */
const clearSql = `UPDATE login_throttle SET failures = 0, blocked_until = 0, inflight = ${LET_GO}
WHERE key = :key AND (failures > 0 OR blocked_until > 0 OR CAST(:held AS INTEGER) > 0)`;

/** Neither a failure nor a success (an outage, a second factor still to come): the slot given back. */
const releaseSql = `UPDATE login_throttle SET inflight = ${LET_GO} WHERE key = :key`;

/** A statement written with `:name` placeholders, turned positional once: the statement and the names' order. */
function named(sql: string): { stmt: Statement; order: string[] } {
  const order: string[] = [];
  const positional = sql.replace(/:(\w+)/g, (_m, name: string) => {
    order.push(name);
    return '?';
  });
  return { stmt: statement(positional), order };
}

const bind = (s: ReturnType<typeof named>, values: Record<string, unknown>): Step => ({
  stmt: s.stmt,
  params: s.order.map((n) => values[n]),
});

const sql = {
  reserve: named(reserveSql),
  clear: named(clearSql),
  release: named(releaseSql),
  state: statement('select failures, window_start, blocked_until, inflight, inflight_until from login_throttle where key = ?'),
};

export const throttleQueries = ({ fast }: Database) => {
  const fails = new Map<Ladder, ReturnType<typeof named>>();
  const failStep = (s: Extract<KeyOutcome, { outcome: 'failed' }>, now: number): Step => {
    let counter = fails.get(s.ladder);
    if (!counter) fails.set(s.ladder, (counter = named(failSql(s.ladder))));
    const firstBlock = delayMs(1, s.ladder) ? now + delayMs(1, s.ladder) : 0;
    return bind(counter, { key: s.key, now, firstBlock, expiredBefore: now - s.ladder.windowMs, held: s.held ? 1 : 0 });
  };

  /** Until when `key` is delayed within its window (0 when it is not), from its row. */
  const delayOf = (row: Record<string, unknown> | undefined, l: Ladder, now: number): number =>
    !row || num(row.window_start) <= now - l.windowMs ? 0 : num(row.blocked_until);

  /** Every gate's row in one read (2 or 3 keys: a statement per count, made once). */
  const states = new Map<number, Statement>();
  const rowsOf = async (gates: Array<[string, Ladder]>): Promise<Array<Record<string, unknown> | undefined>> => {
    let stmt = states.get(gates.length);
    if (!stmt) {
      stmt = statement(
        `select key, failures, window_start, blocked_until, inflight, inflight_until from login_throttle where key in (${gates.map(() => '?').join(', ')})`,
      );
      states.set(gates.length, stmt);
    }
    const rows = await fast.all(
      stmt,
      gates.map(([key]) => key),
    );
    return gates.map(([key]) => rows.find((r) => r.key === key));
  };

  /** Until when the attempt is delayed: the latest delay running on any of its gates (0 when none runs). */
  const latestDelay = (gates: Array<[string, Ladder]>, rows: Array<Record<string, unknown> | undefined>, now: number): number =>
    Math.max(0, ...gates.map(([, l], i) => delayOf(rows[i], l, now)));

  /**
   * Whether a gate's row would refuse a reservation now: the same test as reserveSql's WHERE, a delay
   * running within the window, or its slots taken.
   */
  const refuses = (row: Record<string, unknown> | undefined, l: Ladder, now: number): boolean => {
    if (!row) return false;
    if (delayOf(row, l, now) > now) return true;
    const failures = num(row.window_start) <= now - l.windowMs ? 0 : num(row.failures);
    const inflight = num(row.inflight_until) > now ? num(row.inflight) : 0;
    return inflight > 0 && failures + inflight >= l.free;
  };

  /** The end of an attempt on each of its keys, in one write that shares the group commit of concurrent requests. */
  const endAttempt = async (outcomes: KeyOutcome[], now: number): Promise<void> => {
    await fast.groupCommit(
      outcomes.map((s) =>
        s.outcome === 'failed'
          ? failStep(s, now)
          : s.outcome === 'cleared'
            ? bind(sql.clear, { key: s.key, held: s.held ? 1 : 0 })
            : bind(sql.release, { key: s.key, held: 1 }),
      ),
    );
  };

  return {
    /**
     * Takes a slot on every gate, or none: undefined when every slot was taken, else the refusal: the
     * index of a gate that refused (none when none refuses any more: a slot was freed since, ask
     * again), and until when the attempt is delayed, by whichever of its gates (0: none, it is busy).
     *
     * On SQLite, one job of the group commit (all or none); a refusal is then read back, every gate's
     * row in one read, not written. On PostgreSQL, one upsert per gate in order, and the slots taken
     * before a refusal are given back: a job of several upserts would hold one row's lock while
     * waiting for another's (a deadlock with a concurrent one) and, refused, would send the whole
     * group it joined back one by one.
     */
    async reserveAll(gates: Array<[string, Ladder]>, now: number, leaseUntil: number): Promise<GateRefusal | undefined> {
      const steps = gates.map(([key, l]) => bind(sql.reserve, { key, now, leaseUntil, free: l.free, expiredBefore: now - l.windowMs }));
      let gate: number | undefined;
      if (fast.oneWriter) {
        if ((await fast.groupCommit(steps.map((s) => ({ ...s, expectRows: 1 })))) !== null) return undefined;
      } else {
        gate = steps.length;
        for (const [i, step] of steps.entries()) {
          if ((await fast.run(step.stmt, step.params)) > 0) continue;
          gate = i;
          break;
        }
        if (gate === steps.length) return undefined;
        if (gate > 0)
          await endAttempt(
            gates.slice(0, gate).map(([key]) => ({ key, outcome: 'released' })),
            now,
          );
      }
      const rows = await rowsOf(gates);
      if (gate === undefined) {
        const i = gates.findIndex(([, l], j) => refuses(rows[j], l, now));
        gate = i < 0 ? undefined : i;
      }
      return { gate, blockedUntil: latestDelay(gates, rows, now) };
    },

    /** Until when an attempt gated by `gates` is delayed, by whichever of them (0 when none is): one read. */
    async delayedUntil(gates: Array<[string, Ladder]>, now: number): Promise<number> {
      return latestDelay(gates, await rowsOf(gates), now);
    },

    /** Until when `key` is delayed within its window (0 when it is not). */
    async blockedUntil(key: string, l: Ladder, now: number): Promise<number> {
      return delayOf(await fast.get(sql.state, [key]), l, now);
    },

    /** How many failures `key` holds within its window. */
    async failures(key: string, l: Ladder, now: number): Promise<number> {
      const row = await fast.get(sql.state, [key]);
      return row && num(row.window_start) > now - l.windowMs ? num(row.failures) : 0;
    },

    endAttempt,
  };
};

export type ThrottleQueries = ReturnType<typeof throttleQueries>;

/** Why a reservation was refused: which gate (none: nothing refuses now, ask again) and until when it is delayed (0: busy). */
export type GateRefusal = { gate?: number; blockedUntil: number };
