import { statement, type Row, type Statement, type Step } from './statements.ts';

/** The SQLSTATE of latchkey_guard (migration 20261127500001): a guarded step changed another row count. */
export const GUARD_FAILED = 'LK001';

/** One statement per combination of steps, declared the first time it is needed (a handful in all). */
const fused = new Map<string, Statement | null>();

const WRITE = /^\s*(insert|update|delete)\b/i;
/** A plain insert of new rows: no other step of the statement can see or touch them. */
const PLAIN_INSERT = /^\s*insert into \w+ \([^)]*\) values \([^)]*\)\s*$/i;

/**
 * A transaction's steps as one PostgreSQL statement, so one round trip: node-postgres does not
 * pipeline, and BEGIN, a spend, two inserts and COMMIT were five. Each step becomes a data-modifying
 * CTE (`… returning 1`); the final select gives each step's row count and runs every `expectRows`
 * through latchkey_guard, which fails the statement when the count is wrong. A statement is atomic,
 * so a failed guard leaves none of its writes, as the rolled-back transaction did. The guarantees hold
 * as before: a spend (an UPDATE … where consumed_at is null) still takes its row's lock, so a
 * concurrent spend of the same code waits for this statement's transaction, then finds the row spent
 * and fails its own guard. The CTEs share one snapshot, and two of them changing one row would
 * not see each other: so only the token-issue shape is fused, one guarded write (the spend) then
 * plain inserts of new rows. Undefined for any other steps: they keep their transaction.
 */
export function fuse(steps: Step[]): Statement | undefined {
  const key = steps.map((s) => `${s.stmt.name}:${s.expectRows ?? ''}`).join(',');
  let stmt = fused.get(key);
  if (stmt === undefined) {
    stmt = fusable(steps) && (steps.length > 1 || steps[0]!.expectRows !== undefined) ? statement(fusedSql(steps, 0).sql) : null;
    fused.set(key, stmt);
  }
  return stmt ?? undefined;
}

/**
 * A guarded write (or a plain insert) first, then plain inserts of new rows. An unguarded update is
 * never fused: two of one row in one statement would silently keep only one (a throttle counter).
 */
function fusable(steps: Step[]): boolean {
  const [first, ...rest] = steps;
  if (first === undefined || !rest.every((s) => s.expectRows === undefined && PLAIN_INSERT.test(s.stmt.sql))) return false;
  if (first.expectRows === undefined) return PLAIN_INSERT.test(first.stmt.sql);
  return WRITE.test(first.stmt.sql) && !/\b(returning|on conflict)\b/i.test(first.stmt.sql);
}

/** The CTEs of `steps`, named from s<offset>, and the select list of their counts. */
function fusedSql(steps: Step[], offset: number): { sql: string; ctes: string[]; counts: string[] } {
  const ctes = steps.map((s, i) => `s${offset + i} as (${s.stmt.sql} returning 1)`);
  const counts = steps.map((s, i) => {
    const n = `(select count(*) from s${offset + i})`;
    return s.expectRows === undefined ? `${n}::int as c${offset + i}` : `latchkey_guard(${n}, ${s.expectRows}) as c${offset + i}`;
  });
  return { sql: `with ${ctes.join(', ')} select ${counts.join(', ')}`, ctes, counts };
}

/** Placeholders `?` numbered `$1…` in order, as statement() does. */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/** PostgreSQL's limit on a select list is 1,664 columns: a group fuses only below it. */
const MAX_FUSED_STEPS = 1000;

/**
 * A group commit's jobs as one statement (one round trip instead of BEGIN, a statement per job and
 * COMMIT), when every job is of the shape fuse() takes or a lone plain insert (an audit event, a token
 * of client_credentials). Not prepared: the shape varies with the group. If any guard fails the whole
 * statement fails and writes nothing, and the jobs run again one by one, as a failed group did. Two
 * spends of one row in one group: PostgreSQL applies only one modification of a row per statement,
 * so the other spend changes nothing, its guard fails, and the jobs run again alone.
 */
export function fuseGroup(jobs: Step[][]): { text: string; params: unknown[]; counts(row: Row | undefined): number[][] } | undefined {
  if (jobs.length < 2 || !jobs.every(fusable)) return undefined;
  if (jobs.reduce((n, steps) => n + steps.length, 0) > MAX_FUSED_STEPS) return undefined;
  const ctes: string[] = [];
  const counts: string[] = [];
  for (const steps of jobs) {
    const part = fusedSql(steps, ctes.length);
    ctes.push(...part.ctes);
    counts.push(...part.counts);
  }
  return {
    text: numbered(`with ${ctes.join(', ')} select ${counts.join(', ')}`),
    params: jobs.flatMap(fusedParams),
    counts: (row) => {
      let i = 0;
      return jobs.map((steps) => steps.map(() => Number(row?.[`c${i++}`] ?? 0)));
    },
  };
}

/** The fused statement's parameters: every step's, in order (the placeholders are numbered so). */
export const fusedParams = (steps: Step[]): unknown[] => steps.flatMap((s) => s.params);

/** Each step's row count, from the fused statement's one row. */
export const fusedCounts = (row: Row | undefined, steps: Step[]): number[] => steps.map((_, i) => Number(row?.[`c${i}`] ?? 0));

/** Whether a statement failed on latchkey_guard. */
export const guardFailed = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === GUARD_FAILED;
