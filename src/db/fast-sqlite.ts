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
  // Each job in a savepoint of the shared transaction (better-sqlite3 nests transactions so): a job
  // that fails is rolled back alone, and the others still commit.
  const group = conn.transaction((jobs: Job[]) =>
    jobs.map((job) => {
      try {
        return transaction(job.steps);
      } catch (err) {
        // SQLite rolled the whole transaction back (disk full, I/O error): nothing of the group may
        // commit, so the group fails whole rather than committing later jobs on their own.
        if (!conn.inTransaction) throw err;
        return err instanceof RowCountMismatch ? null : { error: err };
      }
    }),
  );
  const queue = new CommitQueue(async (jobs) => {
    let results: ReturnType<typeof group>;
    try {
      results = await gate.whenFree(() => group(jobs));
    } catch (err) {
      for (const job of jobs) job.reject(err);
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
