import type { Knex } from 'knex';

/**
 * The hot statements (token issue and lookup, client lookup, the throttle, the audit insert), run
 * without building a query each time: prepared once per process on SQLite (better-sqlite3 is
 * synchronous and fast when used directly), named prepared statements on PostgreSQL. knex stays the
 * toolkit for migrations, the schema and the cold paths; queries modules choose per statement.
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

/** A step of a batch; with `expect`, a row count other than that rolls the whole batch back. */
export interface Step {
  stmt: Statement;
  params: unknown[];
  expect?: number;
}

export type Row = Record<string, unknown>;

export interface FastDb {
  get<T = Row>(s: Statement, params?: unknown[]): Promise<T | undefined>;
  all<T = Row>(s: Statement, params?: unknown[]): Promise<T[]>;
  /** Runs a statement; the number of rows it changed. */
  run(s: Statement, params?: unknown[]): Promise<number>;
  /** Runs the steps in one transaction: each step's row count when committed, null when an `expect` failed (rolled back). */
  batch(steps: Step[]): Promise<number[] | null>;
  /**
   * As `batch`, but the steps may share one transaction with the writes of concurrent requests (group
   * commit): all-or-nothing for its own steps, and resolved only once they are committed.
   */
  commit(steps: Step[]): Promise<number[] | null>;
  /** Calls `fn` once, after the next statement that succeeds (the end of a database outage). */
  onNextSuccess(fn: () => void): void;
}

/** One-shot listeners for the next successful statement; a no-op check on the hot path otherwise. */
class SuccessWatch {
  private waiting: Array<() => void> = [];
  add(fn: () => void): void {
    this.waiting.push(fn);
  }
  ok<T>(value: T): T {
    if (this.waiting.length > 0) for (const fn of this.waiting.splice(0)) fn();
    return value;
  }
}

/** What better-sqlite3 offers that is used here (the package ships no types). */
export interface SqliteConnection {
  prepare(sql: string): { get(...p: unknown[]): unknown; all(...p: unknown[]): unknown[]; run(...p: unknown[]): { changes: number }; reader: boolean };
  transaction<F extends (...a: never[]) => unknown>(fn: F): F;
  pragma(sql: string): unknown;
  close(): void;
  readonly inTransaction: boolean;
}

/**
 * On SQLite one connection serves knex and the fast statements; while a knex transaction is open on
 * it (an admin change), a fast statement must not slip into that transaction, so it waits here.
 */
export class TransactionGate {
  private open: Promise<void> | undefined;

  get busy(): boolean {
    return this.open !== undefined;
  }

  /**
   * Resolves when no transaction holds the gate. Another may take it before the caller resumes, so a
   * caller loops (`while (gate.busy) await gate.wait()`) and then runs its statement at once, in the
   * same synchronous stretch as the last check.
   */
  async wait(): Promise<void> {
    while (this.open) await this.open;
  }

  async hold<T>(work: () => Promise<T>): Promise<T> {
    // Checked and claimed in one synchronous stretch: two callers can never both get past here.
    while (this.open) await this.open;
    let release!: () => void;
    this.open = new Promise((r) => (release = r));
    try {
      return await work();
    } finally {
      this.open = undefined;
      release();
    }
  }
}

/** The one SQLite connection of a process, opened again if it was closed; statements are prepared per opening. */
export class SharedSqlite {
  private conn: SqliteConnection | undefined;
  /** Bumped at each opening, so statements prepared on an earlier one are prepared again. */
  generation = 0;

  constructor(private readonly open: () => SqliteConnection) {}

  connection(): SqliteConnection {
    if (!this.conn) {
      this.conn = this.open();
      this.generation++;
    }
    return this.conn;
  }

  close(): void {
    this.conn?.close();
    this.conn = undefined;
  }
}

/** better-sqlite3 binds no booleans: 1 and 0, as knex stores them. */
const bindable = (params: unknown[]) => params.map((p) => (p === true ? 1 : p === false ? 0 : p));

class Abort extends Error {}

/** A COMMIT that failed: the outcome is unknown, so nothing may be retried. */
class CommitUnknown extends Error {
  constructor(cause: unknown) {
    super('the commit failed; its outcome is unknown', { cause });
  }
}

interface Job {
  steps: Step[];
  resolve(counts: number[] | null): void;
  reject(err: unknown): void;
}

export function sqliteFast(shared: SharedSqlite, gate: TransactionGate): FastDb {
  const watch = new SuccessWatch();
  let prepared = new Map<Statement, ReturnType<SqliteConnection['prepare']>>();
  let generation = -1;
  let transaction: (steps: Step[]) => number[];
  let group: (jobs: Job[]) => Array<number[] | null | { error: unknown }>;
  /** The connection, with the statement cache and the batch transaction of its opening. */
  const connection = () => {
    const conn = shared.connection();
    if (generation !== shared.generation) {
      generation = shared.generation;
      prepared = new Map();
      transaction = conn.transaction((steps: Step[]) =>
        steps.map((step) => {
          const changes = prep(step.stmt).run(...bindable(step.params)).changes;
          if (step.expect !== undefined && changes !== step.expect) throw new Abort();
          return changes;
        }),
      );
      // Each job in a savepoint of the shared transaction (better-sqlite3 nests transactions so): a
      // job that fails is rolled back alone, and the others still commit.
      group = conn.transaction((jobs: Job[]) =>
        jobs.map((job) => {
          try {
            return transaction(job.steps);
          } catch (err) {
            // SQLite rolled the whole transaction back (disk full, I/O error): nothing of the group
            // may commit, so the group fails whole rather than committing later jobs on their own.
            if (!conn.inTransaction) throw err;
            return err instanceof Abort ? null : { error: err };
          }
        }),
      );
    }
    return conn;
  };
  let queue: Job[] = [];
  /** Writes everything queued in this turn of the event loop in one transaction: one commit for all. */
  async function flush(): Promise<void> {
    while (gate.busy) await gate.wait();
    const jobs = queue;
    queue = [];
    let results;
    try {
      connection();
      results = group(jobs);
    } catch (err) {
      for (const job of jobs) job.reject(err);
      return;
    }
    watch.ok(undefined);
    results.forEach((r, i) => (r !== null && !Array.isArray(r) ? jobs[i]!.reject(r.error) : jobs[i]!.resolve(r)));
  }
  const prep = (s: Statement) => {
    const conn = connection();
    let p = prepared.get(s);
    if (!p) prepared.set(s, (p = conn.prepare(s.sql)));
    return p;
  };
  return {
    async get<T>(s: Statement, params: unknown[] = []) {
      while (gate.busy) await gate.wait();
      return watch.ok(prep(s).get(...bindable(params)) as T | undefined);
    },
    async all<T>(s: Statement, params: unknown[] = []) {
      while (gate.busy) await gate.wait();
      return watch.ok(prep(s).all(...bindable(params)) as T[]);
    },
    async run(s: Statement, params: unknown[] = []) {
      while (gate.busy) await gate.wait();
      const p = prep(s);
      return watch.ok(p.reader ? p.all(...bindable(params)).length : p.run(...bindable(params)).changes);
    },
    async batch(steps: Step[]) {
      while (gate.busy) await gate.wait();
      try {
        connection();
        return watch.ok(transaction(steps));
      } catch (err) {
        if (err instanceof Abort) return null;
        throw err;
      }
    },
    commit(steps: Step[]) {
      return new Promise<number[] | null>((resolve, reject) => {
        queue.push({ steps, resolve, reject });
        if (queue.length === 1) setImmediate(() => void flush());
      });
    },
    onNextSuccess: (fn) => watch.add(fn),
  };
}

interface PgConnection {
  query(q: { name?: string; text: string; values?: unknown[] } | string): Promise<{ rows: Row[]; rowCount: number | null }>;
}

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
  const fast: FastDb = {
    get: <T>(s: Statement, params: unknown[] = []) => on(async (c) => (await exec(c, s, params)).rows[0] as T | undefined),
    all: <T>(s: Statement, params: unknown[] = []) => on(async (c) => (await exec(c, s, params)).rows as T[]),
    run: (s: Statement, params: unknown[] = []) => on(async (c) => (await exec(c, s, params)).rowCount ?? 0),
    batch: (steps: Step[]) =>
      on(async (c) => {
        await c.query('BEGIN');
        try {
          const counts: number[] = [];
          for (const step of steps) {
            const changed = (await exec(c, step.stmt, step.params)).rowCount ?? 0;
            if (step.expect !== undefined && changed !== step.expect) {
              await c.query('ROLLBACK');
              return null;
            }
            counts.push(changed);
          }
          await c.query('COMMIT');
          return counts;
        } catch (err) {
          await c.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      }),
    commit: (steps: Step[]) =>
      new Promise<number[] | null>((resolve, reject) => {
        queue.push({ steps, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(() => void flush());
        }
      }),
    onNextSuccess: (fn) => watch.add(fn),
  };

  /**
   * Group commit: the writes queued in one turn of the event loop go in one transaction, so one
   * commit (one WAL flush) serves them all. Optimistic: if any job's guard fails or any statement
   * errs, the group is rolled back and each job runs again alone, so every job still commits whole
   * or not at all and is answered only after its own commit.
   */
  let queue: Job[] = [];
  let scheduled = false;
  const MAX_GROUP = 128;
  async function flush(): Promise<void> {
    scheduled = false;
    const jobs = queue.splice(0, MAX_GROUP);
    if (queue.length > 0) {
      scheduled = true;
      setImmediate(() => void flush());
    }
    if (jobs.length === 1) return settle(jobs[0]!);
    let grouped: number[][] | undefined;
    try {
      grouped = await on(async (c) => {
        await c.query('BEGIN');
        let all: number[][];
        try {
          all = [];
          for (const job of jobs) {
            const counts: number[] = [];
            for (const step of job.steps) {
              const changed = (await exec(c, step.stmt, step.params)).rowCount ?? 0;
              if (step.expect !== undefined && changed !== step.expect) throw new Abort();
              counts.push(changed);
            }
            all.push(counts);
          }
        } catch (err) {
          await c.query('ROLLBACK').catch(() => undefined);
          if (err instanceof Abort) return undefined;
          throw err;
        }
        try {
          await c.query('COMMIT');
        } catch (err) {
          // Whether a failed COMMIT committed cannot be known: retrying could apply a job twice (a
          // spend would then look like a replay), so every job of the group fails instead.
          throw new CommitUnknown(err);
        }
        return all;
      });
    } catch (err) {
      if (err instanceof CommitUnknown) {
        for (const job of jobs) job.reject(err.cause);
        return;
      }
      grouped = undefined;
    }
    if (grouped) grouped.forEach((counts, i) => jobs[i]!.resolve(counts));
    else await Promise.all(jobs.map(settle));
  }
  /** One job in its own transaction (a single unguarded statement needs none: it commits by itself). */
  const settle = (job: Job) => {
    const [only] = job.steps;
    const done = job.steps.length === 1 && only!.expect === undefined ? fast.run(only!.stmt, only!.params).then((n) => [n]) : fast.batch(job.steps);
    return done.then(job.resolve, job.reject);
  };
  return fast;
}

/** Inside a knex transaction: the same statements through it, so they belong to the transaction. */
export function knexFast(trx: Knex): FastDb {
  const rows = (result: unknown): Row[] => (Array.isArray(result) ? result : ((result as { rows?: Row[] }).rows ?? []));
  const changes = (result: unknown): number =>
    Array.isArray(result) ? result.length : ((result as { rowCount?: number; changes?: number }).rowCount ?? (result as { changes?: number }).changes ?? 0);
  const raw = (s: Statement, params: unknown[]) => trx.raw(s.sql, params as Knex.RawBinding[]);
  const fast: Omit<FastDb, 'commit' | 'onNextSuccess'> = {
    get: async <T>(s: Statement, params: unknown[] = []) => rows(await raw(s, params))[0] as T | undefined,
    all: async <T>(s: Statement, params: unknown[] = []) => rows(await raw(s, params)) as T[],
    run: async (s: Statement, params: unknown[] = []) => changes(await raw(s, params)),
    batch: (steps: Step[]) =>
      trx
        .transaction(async (inner) => {
          const counts: number[] = [];
          for (const step of steps) {
            const changed = changes(await inner.raw(step.stmt.sql, step.params as Knex.RawBinding[]));
            if (step.expect !== undefined && changed !== step.expect) throw new Abort();
            counts.push(changed);
          }
          return counts;
        })
        .catch((err: unknown) => {
          if (err instanceof Abort) return null;
          throw err;
        }),
  };
  // Inside a transaction: its statements succeed only if the database is there; knex reports them.
  return { ...fast, commit: fast.batch, onNextSuccess: () => undefined };
}

const registry = new WeakMap<Knex, FastDb>();

export const registerFast = (db: Knex, fast: FastDb): void => void registry.set(db, fast);

/** The fast statements for a database handle, or through the transaction when `db` is one. */
export function fastOf(db: Knex): FastDb {
  let fast = registry.get(db);
  if (!fast) registry.set(db, (fast = knexFast(db)));
  return fast;
}
