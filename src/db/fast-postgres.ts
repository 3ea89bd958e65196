import type { Knex } from 'knex';
import { fuse, fuseGroup, fusedCounts, fusedParams, guardFailed } from './fused-steps.ts';
import {
  RowCountMismatch,
  checked,
  CommitQueue,
  SuccessWatch,
  type FastDb,
  type Job,
  type Row,
  type Statement,
  type Step,
} from './statements.ts';

interface PgConnection {
  query(q: { name?: string; text: string; values?: unknown[] } | string): Promise<{ rows: Row[]; rowCount: number | null }>;
}

/** A COMMIT that failed: the outcome is unknown, so nothing may be retried. */
class CommitUnknown extends Error {
  constructor(cause: unknown) {
    super('the commit failed; its outcome is unknown', { cause });
  }
}

/** The most jobs one group commit takes; the rest go to the next one. */
const MAX_GROUP = 128;

/** PostgreSQL: named prepared statements on connections from knex's own pool. */
export function pgFast(db: Knex): FastDb {
  const pool = db.client as { acquireConnection(): Promise<PgConnection>; releaseConnection(c: PgConnection): Promise<void> };
  const watch = new SuccessWatch();
  async function on<T>(work: (c: PgConnection) => Promise<T>): Promise<T> {
    const conn = await pool.acquireConnection();
    try {
      return watch.ok(await work(conn));
    } finally {
      await pool.releaseConnection(conn);
    }
  }
  const exec = (c: PgConnection, s: Statement, params: unknown[]) => c.query({ name: s.name, text: s.pgSql, values: params });
  /** A transaction's steps in one round trip when they fuse (fused-steps.ts); a failed guard throws RowCountMismatch. */
  async function runFused(c: PgConnection, stmt: Statement, steps: Step[]): Promise<number[]> {
    try {
      return fusedCounts((await exec(c, stmt, fusedParams(steps))).rows[0], steps);
    } catch (err) {
      throw guardFailed(err) ? new RowCountMismatch() : err;
    }
  }
  async function runSteps(c: PgConnection, steps: Step[]): Promise<number[]> {
    const one = fuse(steps);
    if (one) return runFused(c, one, steps);
    const counts: number[] = [];
    for (const step of steps) counts.push(checked(step, (await exec(c, step.stmt, step.params)).rowCount ?? 0));
    return counts;
  }
  /** BEGIN, the work, COMMIT; a failed `expect` rolls back and gives undefined. */
  async function transactionOn<T>(c: PgConnection, work: () => Promise<T>): Promise<T | undefined> {
    await c.query('BEGIN');
    let result: T;
    try {
      result = await work();
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      if (err instanceof RowCountMismatch) return undefined;
      throw err;
    }
    try {
      await c.query('COMMIT');
    } catch (err) {
      throw new CommitUnknown(err);
    }
    return result;
  }

  const fast: FastDb = {
    get: <T>(s: Statement, params: unknown[] = []) => on(async (c) => (await exec(c, s, params)).rows[0] as T | undefined),
    all: <T>(s: Statement, params: unknown[] = []) => on(async (c) => (await exec(c, s, params)).rows as T[]),
    run: (s: Statement, params: unknown[] = []) => on(async (c) => (await exec(c, s, params)).rowCount ?? 0),
    transaction: (steps: Step[]) => {
      // One fused statement is a transaction by itself: no BEGIN and COMMIT round trips around it.
      const one = fuse(steps);
      if (one)
        return on((c) => runFused(c, one, steps)).catch((err: unknown) => (err instanceof RowCountMismatch ? null : Promise.reject(err)));
      return on(async (c) => (await transactionOn(c, () => runSteps(c, steps))) ?? null).catch((err: unknown) => {
        throw err instanceof CommitUnknown ? err.cause : err;
      });
    },
    groupCommit: (steps: Step[]) => queue.add(steps),
    onNextSuccess: (fn) => watch.add(fn),
    oneWriter: false,
  };

  /** One job in its own transaction (a single unguarded statement needs none: it commits by itself). */
  const commitAlone = (job: Job) => {
    const [only] = job.steps;
    const done =
      job.steps.length === 1 && only!.expectRows === undefined
        ? fast.run(only!.stmt, only!.params).then((n) => [n])
        : fast.transaction(job.steps);
    return done.then(job.resolve, job.reject);
  };

  /**
   * The group as one statement (fused-steps.ts): atomic by itself, so no BEGIN and COMMIT. An error
   * the server reports (a SQLSTATE: a failed guard, a constraint) means nothing was written, and the
   * jobs run again one by one; any other (the connection lost) leaves the outcome unknown, so, as for
   * a failed COMMIT, nothing is retried.
   */
  async function commitFused(jobs: Job[], one: NonNullable<ReturnType<typeof fuseGroup>>): Promise<void> {
    let counts: number[][];
    try {
      counts = one.counts(await on(async (c) => (await c.query({ text: one.text, values: one.params })).rows[0]));
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) await Promise.all(jobs.map(commitAlone));
      else for (const job of jobs) job.reject(err);
      return;
    }
    counts.forEach((c, i) => {
      jobs[i]!.resolve(c);
    });
  }

  /**
   * Group commit: one transaction, so one commit (one WAL flush) serves every job. Optimistic: if a
   * job's guard fails or a statement errs, the group is rolled back and each job runs again alone, so
   * every job still commits whole or not at all and is answered only after its own commit. A failed
   * COMMIT is never retried: whether it committed cannot be known, and a retried spend would look
   * like a replay.
   */
  const queue = new CommitQueue(async (jobs) => {
    if (jobs.length === 1) return commitAlone(jobs[0]!);
    const one = fuseGroup(jobs.map((j) => j.steps));
    if (one) return commitFused(jobs, one);
    let grouped: number[][] | undefined;
    try {
      grouped = await on((c) =>
        transactionOn(c, async () => {
          const all: number[][] = [];
          for (const job of jobs) all.push(await runSteps(c, job.steps));
          return all;
        }),
      );
    } catch (err) {
      if (err instanceof CommitUnknown) {
        for (const job of jobs) job.reject(err.cause);
        return;
      }
    }
    if (grouped) for (const [i, counts] of grouped.entries()) jobs[i]!.resolve(counts);
    else await Promise.all(jobs.map(commitAlone));
  }, MAX_GROUP);

  return fast;
}
