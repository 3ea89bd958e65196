import type { Knex } from 'knex';
import { RowCountMismatch, checked, type FastDb, type Row, type Statement, type Step } from './statements.ts';

const rows = (result: unknown): Row[] => (Array.isArray(result) ? result : ((result as { rows?: Row[] }).rows ?? []));
/** Rows changed: pg's `rowCount`, better-sqlite3's `changes`, or the rows a `RETURNING` gave back. */
const changes = (result: unknown): number =>
  Array.isArray(result) ? result.length : ((result as { rowCount?: number }).rowCount ?? (result as { changes?: number }).changes ?? 0);

/** Inside a knex transaction: the same statements through it, so they belong to the transaction. */
export function knexFast(trx: Knex): FastDb {
  const raw = (db: Knex, s: Statement, params: unknown[]) => db.raw(s.sql, params as Knex.RawBinding[]);
  const transaction = (steps: Step[]) =>
    trx
      .transaction(async (inner) => {
        const counts: number[] = [];
        for (const step of steps) counts.push(checked(step, changes(await raw(inner, step.stmt, step.params))));
        return counts;
      })
      .catch((err: unknown) => {
        if (err instanceof RowCountMismatch) return null;
        throw err;
      });
  return {
    get: async <T>(s: Statement, params: unknown[] = []) => rows(await raw(trx, s, params))[0] as T | undefined,
    all: async <T>(s: Statement, params: unknown[] = []) => rows(await raw(trx, s, params)) as T[],
    run: async (s: Statement, params: unknown[] = []) => changes(await raw(trx, s, params)),
    transaction,
    // Inside a transaction there is nothing to group: its commit is the transaction's own.
    groupCommit: transaction,
    // Its statements are knex's, whose events report the end of an outage already.
    onNextSuccess: () => undefined,
    oneWriter: false,
  };
}
