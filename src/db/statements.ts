/**
 * The hot statements (token issue and lookup, client lookup, the throttle, the audit insert), run
 * without building a query each time: prepared once per process on SQLite (fast-sqlite.ts), named
 * prepared statements on PostgreSQL (fast-postgres.ts), through knex inside a transaction
 * (fast-knex.ts). knex stays the toolkit for migrations, the schema and the cold paths; a queries
 * module chooses per statement. How each database commits: database.ts.
 */

/** One SQL text with `?` placeholders, the same for both databases; named so PostgreSQL prepares it once. */
export interface Statement {
  readonly name: string;
  readonly sql: string;
  readonly pgSql: string;
}

let statements = 0;

/** Declares a statement; call once at module level, never per request. */
export function statement(sql: string): Statement {
  let n = 0;
  return { name: `lk_${++statements}`, sql, pgSql: sql.replace(/\?/g, () => `$${++n}`) };
}

/** A step of a transaction; with `expect`, a row count other than that rolls the whole transaction back. */
export interface Step {
  stmt: Statement;
  params: unknown[];
  expectRows?: number;
}

export type Row = Record<string, unknown>;

export interface FastDb {
  get<T = Row>(s: Statement, params?: unknown[]): Promise<T | undefined>;
  all<T = Row>(s: Statement, params?: unknown[]): Promise<T[]>;
  /** Runs a statement; the number of rows it changed (or returned, for `… RETURNING`). */
  run(s: Statement, params?: unknown[]): Promise<number>;
  /** Runs the steps in one transaction of their own: each step's row count when committed, null when an `expect` failed (rolled back). */
  transaction(steps: Step[]): Promise<number[] | null>;
  /**
   * As `transaction`, but the steps may share one transaction with the writes of concurrent requests (group
   * commit): all-or-nothing for its own steps, and resolved only once they are committed.
   */
  groupCommit(steps: Step[]): Promise<number[] | null>;
  /** Calls `fn` once, after the next statement that succeeds (the end of a database outage). */
  onNextSuccess(fn: () => void): void;
  /**
   * True on SQLite, whose one connection writes alone: a job of several upserts never holds one row's
   * lock while it waits for another's, and a refused guard rolls back that job alone. False on
   * PostgreSQL (and inside a knex transaction), where such a job could deadlock with a concurrent
   * one and a refused guard sends the whole group back one by one.
   */
  readonly oneWriter: boolean;
}

/** Thrown inside a transaction when a step's `expect` fails: the transaction is rolled back. */
export class RowCountMismatch extends Error {}

/** The row count a step must have, checked as it runs. */
export function checked(step: Step, changed: number): number {
  if (step.expectRows !== undefined && changed !== step.expectRows) throw new RowCountMismatch();
  return changed;
}

/** One-shot listeners for the next successful statement; a no-op check on the hot path otherwise. */
export class SuccessWatch {
  private waiting: Array<() => void> = [];

  add(fn: () => void): void {
    this.waiting.push(fn);
  }

  ok<T>(value: T): T {
    if (this.waiting.length > 0) for (const fn of this.waiting.splice(0)) fn();
    return value;
  }
}

/** A request's writes waiting for the group commit, and how to answer it. */
export interface Job {
  steps: Step[];
  resolve(counts: number[] | null): void;
  reject(err: unknown): void;
}

/**
 * Collects the writes queued in one turn of the event loop and hands them to `flush` together: one
 * transaction, one commit for all of them (group commit). `flush` answers every job it is given.
 */
export class CommitQueue {
  private jobs: Job[] = [];
  private scheduled = false;

  constructor(
    private readonly flush: (jobs: Job[]) => Promise<void>,
    private readonly maxGroup = Number.POSITIVE_INFINITY,
  ) {}

  add(steps: Step[]): Promise<number[] | null> {
    return new Promise((resolve, reject) => {
      this.jobs.push({ steps, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const jobs = this.jobs.splice(0, this.maxGroup);
      if (this.jobs.length > 0) this.schedule();
      void this.flush(jobs);
    });
  }
}
