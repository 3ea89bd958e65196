import type { Knex } from 'knex';
import { knexFast } from './fast-knex.ts';
import type { Checkpoints } from './checkpointer.ts';
import type { FastDb } from './statements.ts';
import type { TransactionGate } from './transaction-gate.ts';

/**
 * What a queries module runs on, handed to it by the composition root (src/services.ts): knex for the
 * cold paths and the schema, the fast statements for the hot ones, both on the same database or on
 * the same transaction.
 *
 * How each database commits (the one place this is written down):
 *
 * - `fast.transaction(steps)`: the steps in one transaction of their own, committed before it
 *   resolves; null (rolled back) when a step's `expect` fails.
 * - `fast.groupCommit(steps)`: the same all-or-nothing for the caller's steps, but they may share one
 *   commit with the writes of concurrent requests (one disk flush for many requests):
 *   - SQLite (fast-sqlite.ts): every job queued in one turn of the event loop runs in one group
 *     transaction. A job with an `expect` after its first step runs in a savepoint, rolled back alone
 *     when it fails; any other job runs as it is, since a failed `expect` on its first step (a count
 *     of zero) wrote nothing. Anything else failing (a constraint, disk full, a first step's count
 *     other than zero) rolls the group back, and each job is run again in a transaction of its own.
 *   - PostgreSQL (fast-postgres.ts): optimistic; the jobs run in one transaction, and if any guard or
 *     statement fails the group is rolled back and each job is retried in a transaction of its own.
 *     A failed COMMIT is never retried (its outcome is unknown).
 *   - Inside a knex transaction (fast-knex.ts): nothing to group with; the steps run in a savepoint
 *     of that transaction and commit with it.
 * - `transaction(work)`: a knex transaction; on SQLite it holds the gate (transaction-gate.ts) so that
 *   no fast statement of another request slips into it on the shared connection.
 */
export interface Database {
  readonly knex: Knex;
  readonly fast: FastDb;
  /** Runs `work` in one transaction: it commits if `work` resolves, rolls back if it throws. */
  transaction<T>(work: (trx: Database) => Promise<T>): Promise<T>;
  /** SQLite opened by the server: the thread that checkpoints the WAL (src/db/checkpointer.ts). */
  readonly checkpoints?: Checkpoints;
}

/** The database inside a knex transaction: the fast statements go through it, and nest as savepoints. */
export function insideTransaction(trx: Knex): Database {
  return {
    knex: trx,
    fast: knexFast(trx),
    transaction: (work) => trx.transaction((inner) => work(insideTransaction(inner))),
  };
}

/** A database opened by `connect`, with its own fast statements (and, on SQLite, its gate). */
export function openedDatabase(knex: Knex, fast: FastDb, gate?: TransactionGate, checkpoints?: Checkpoints): Database {
  const run = <T>(work: (trx: Database) => Promise<T>) => knex.transaction((trx) => work(insideTransaction(trx)));
  return {
    knex,
    fast,
    transaction: (work) => (gate ? gate.hold(() => run(work)) : run(work)),
    checkpoints,
  };
}
