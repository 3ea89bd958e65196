import type { Knex } from 'knex';
import { knexFast } from './fast-knex.ts';
import type { FastDb } from './statements.ts';

export { statement, type FastDb, type Statement, type Step } from './statements.ts';

const registry = new WeakMap<Knex, FastDb>();

/** Set by `connect` for each database it opens (fast-sqlite.ts or fast-postgres.ts). */
export const registerFast = (db: Knex, fast: FastDb): void => void registry.set(db, fast);

/** The fast statements for a database handle, or through the transaction when `db` is one. */
export function fastOf(db: Knex): FastDb {
  let fast = registry.get(db);
  if (!fast) registry.set(db, (fast = knexFast(db)));
  return fast;
}
