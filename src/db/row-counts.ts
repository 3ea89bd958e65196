import type { Knex } from 'knex';

/** The tables whose rows the database counts as they are written (migrations/20261206000000_row_counts.ts). */
export type CountedTable = 'users' | 'clients';
const COUNTED: readonly CountedTable[] = ['users', 'clients'];

/** PostgreSQL adds a row per writing statement; past this many for a table, a read folds them into one. */
const FOLD_AT = 256;

/**
 * How many rows `table` holds, exactly, without counting them: the sum of what its triggers wrote.
 * The answer of `count(*)` in the same transaction would be the same; it costs a few rows' read instead
 * of the whole table's index.
 */
export async function rowCount(db: Knex, table: CountedTable): Promise<number> {
  const row = (await db('row_counts').where({ name: table }).sum({ n: 'n' }).count({ parts: '*' }).first()) as
    | { n: unknown; parts: unknown }
    | undefined;
  if (Number(row?.parts ?? 0) > FOLD_AT) await fold(db, table);
  return Number(row?.n ?? 0);
}

/**
 * Every counted table's rows folded into one where there are several (PostgreSQL): the retention
 * purge's pass does it, so that they do not pile up where nobody reads a list.
 */
export async function foldRowCounts(db: Knex): Promise<void> {
  const parts = (await db('row_counts').select('name').count({ n: '*' }).groupBy('name')) as Array<{ name: string; n: unknown }>;
  for (const table of COUNTED) if (Number(parts.find((p) => p.name === table)?.n ?? 0) > 1) await fold(db, table);
}

/**
 * The table's rows replaced by one holding their sum, in one statement: the rows it deletes are those
 * it sees, so a difference committed meanwhile stays beside the sum, and two folds at once cannot
 * count a row twice (the second finds the first's rows gone and adds a zero).
 */
async function fold(db: Knex, table: CountedTable): Promise<void> {
  await db.raw(
    'with gone as (delete from row_counts where name = ? returning n) insert into row_counts (name, n) select ?, coalesce(sum(n), 0) from gone',
    [table, table],
  );
}
