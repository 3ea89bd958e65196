import { RowCountMismatch, checked, CommitQueue, SuccessWatch, type FastDb, type Job, type Statement, type Step } from './statements.ts';
import type { TransactionGate } from './transaction-gate.ts';

/** What better-sqlite3 offers that is used here (the package ships no types). */
export interface SqliteConnection {
  prepare(sql: string): {
    get(...p: unknown[]): unknown;
    all(...p: unknown[]): unknown[];
    run(...p: unknown[]): { changes: number };
    reader: boolean;
  };
  transaction<F extends (...a: never[]) => unknown>(fn: F): F;
  pragma(sql: string): unknown;
  close(): void;
  readonly inTransaction: boolean;
}

/** Whether a job must run in a savepoint of its group: a check after its first step could fail once that step wrote. */
const needsSavepoint = (steps: Step[]) => steps.some((step, i) => i > 0 && step.expectRows !== undefined);

/** better-sqlite3 binds no booleans: 1 and 0, as knex stores them. */
const bindable = (params: unknown[]) => params.map((p) => (p === true ? 1 : p === false ? 0 : p));

/**
 * SQLite: statements prepared once on the process's one connection and run synchronously, each after
 * any knex transaction holding the gate has ended.
 */
export function sqliteFast(conn: SqliteConnection, gate: TransactionGate): FastDb {
  const watch = new SuccessWatch();
  const prepared = new Map<Statement, ReturnType<SqliteConnection['prepare']>>();
  const prep = (s: Statement) => {
    let p = prepared.get(s);
    if (!p) prepared.set(s, (p = conn.prepare(s.sql)));
    return p;
  };
  const transaction = conn.transaction((steps: Step[]) =>
    steps.map((step) => checked(step, prep(step.stmt).run(...bindable(step.params)).changes)),
  );
  // A job in a savepoint of the shared transaction (better-sqlite3 nests transactions so): one that
  // fails is rolled back alone, and the others still commit.
  const savepointed = (job: Job): number[] | null | { error: unknown } => {
    try {
      return transaction(job.steps);
    } catch (err) {
      // SQLite rolled the whole transaction back (disk full, I/O error): nothing of the group may
      // commit with it, so the group fails whole and its jobs run again one by one.
      if (!conn.inTransaction) throw err;
      return err instanceof RowCountMismatch ? null : { error: err };
    }
  };
  // A job whose only checked step is its first needs no savepoint: when that check fails on a count of
  // zero, the job has written nothing. A savepoint copies every page the job changes into a statement
  // journal, which SQLite spills into a temporary file (an open, a write per page, an unlink) once it
  // passes 64 KiB: a token issue's pages and its audit event's did, and the spill doubled the system
  // calls of every sign-in (issue 37, docs/performance.md). Anything else going wrong in such a job
  // (a constraint, a count other than zero) rolls the whole group back, and it is run again job by job.
  const direct = (steps: Step[]): number[] | null => {
    const counts: number[] = [];
    for (const [i, step] of steps.entries()) {
      const changed = prep(step.stmt).run(...bindable(step.params)).changes;
      if (step.expectRows !== undefined && changed !== step.expectRows) {
        if (i === 0 && changed === 0) return null;
        throw new RowCountMismatch();
      }
      counts.push(changed);
    }
    return counts;
  };
  const group = conn.transaction((jobs: Job[]) => jobs.map((job) => (needsSavepoint(job.steps) ? savepointed(job) : direct(job.steps))));
  const alone = (job: Job) => {
    try {
      job.resolve(watch.ok(transaction(job.steps)));
    } catch (err) {
      if (err instanceof RowCountMismatch) job.resolve(null);
      else job.reject(err);
    }
  };
  const queue = new CommitQueue(async (jobs) => {
    let results: ReturnType<typeof group>;
    try {
      results = await gate.whenFree(() => group(jobs));
    } catch (err) {
      // Rolled back whole: each job again in a transaction of its own, so that one job's fault is its own.
      if (jobs.length === 1 && !(err instanceof RowCountMismatch)) jobs[0]!.reject(err);
      else await gate.whenFree(() => jobs.forEach(alone));
      return;
    }
    watch.ok(undefined);
    results.forEach((r, i) => {
      if (r !== null && !Array.isArray(r)) jobs[i]!.reject(r.error);
      else jobs[i]!.resolve(r);
    });
  });

  return {
    get: <T>(s: Statement, params: unknown[] = []) => gate.whenFree(() => watch.ok(prep(s).get(...bindable(params)) as T | undefined)),
    all: <T>(s: Statement, params: unknown[] = []) => gate.whenFree(() => watch.ok(prep(s).all(...bindable(params)) as T[])),
    run: (s: Statement, params: unknown[] = []) =>
      gate.whenFree(() => {
        const p = prep(s);
        return watch.ok(p.reader ? p.all(...bindable(params)).length : p.run(...bindable(params)).changes);
      }),
    transaction: (steps: Step[]) =>
      gate.whenFree(() => {
        try {
          return watch.ok(transaction(steps));
        } catch (err) {
          if (err instanceof RowCountMismatch) return null;
          throw err;
        }
      }),
    groupCommit: (steps: Step[]) => queue.add(steps),
    onNextSuccess: (fn) => watch.add(fn),
    oneWriter: true,
  };
}
