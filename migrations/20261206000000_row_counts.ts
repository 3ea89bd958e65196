import type { Knex } from 'knex';

/**
 * How many users and clients there are, kept by the database as rows are inserted and deleted, so that
 * the admin API's unfiltered lists answer `totalCount` without counting (src/db/row-counts.ts). A
 * count reads a whole index: at a million users, 300-400 ms a page on PostgreSQL with four admins
 * paging (bench/README.md, "--scale"), where the page itself takes a millisecond.
 *
 * Triggers keep the count, so that no write can forget to: not Latchkey's own, a directory sync's, a
 * SCIM client's, nor an operator's `INSERT` or `DELETE` at the SQL prompt (PostgreSQL's `TRUNCATE` too).
 * What they do not see: SQLite's `REPLACE` (its implied delete fires no trigger while recursive
 * triggers are off; Latchkey never uses it), writes with PostgreSQL's triggers off
 * (`session_replication_role = replica`; docs/operating-latchkey.md says how to count again), and a
 * later migration that makes SQLite rebuild one of these tables (knex does for some `alterTable`
 * changes): it must create the triggers again, as those of the search indexes.
 *
 * - SQLite: one row per table, changed in place by a row trigger (one writer at a time: nothing waits
 *   on it that would not wait anyway).
 * - PostgreSQL: a statement trigger adds a row of its own with the statement's difference, so that
 *   concurrent inserts never wait on one counter row's lock (nor deadlock on it inside a group commit
 *   of several writes). A read sums the table's rows; src/db/row-counts.ts folds them into one now
 *   and then.
 */
const COUNTED = ['users', 'clients'] as const;

export async function up(knex: Knex): Promise<void> {
  // PostgreSQL: no row may be written between the first count and the triggers (a process of the old
  // version still serving during the upgrade): writers wait for this transaction's end.
  if (knex.client.config.client === 'pg') await knex.raw(`lock table ${COUNTED.join(', ')} in share row exclusive mode`);
  await knex.schema.createTable('row_counts', (t) => {
    t.increments('id');
    t.string('name', 64).notNullable().index();
    t.bigInteger('n').notNullable();
  });
  for (const table of COUNTED) await knex.raw(`insert into row_counts (name, n) select '${table}', count(*) from ${table}`);

  if (knex.client.config.client === 'pg') {
    await knex.raw(`create or replace function latchkey_row_counts() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into row_counts (name, n) select tg_table_name, count(*) from new_rows having count(*) > 0;
  elsif tg_op = 'TRUNCATE' then
    delete from row_counts where name = tg_table_name;
  else
    insert into row_counts (name, n) select tg_table_name, -count(*) from old_rows having count(*) > 0;
  end if;
  return null;
end $$`);
    for (const table of COUNTED) {
      await knex.raw(`create trigger ${table}_row_count_insert after insert on ${table}
        referencing new table as new_rows for each statement execute function latchkey_row_counts()`);
      await knex.raw(`create trigger ${table}_row_count_delete after delete on ${table}
        referencing old table as old_rows for each statement execute function latchkey_row_counts()`);
      await knex.raw(`create trigger ${table}_row_count_truncate after truncate on ${table}
        for each statement execute function latchkey_row_counts()`);
    }
    return;
  }
  for (const table of COUNTED) {
    await knex.raw(`create trigger ${table}_row_count_insert after insert on ${table}
      begin update row_counts set n = n + 1 where name = '${table}'; end`);
    await knex.raw(`create trigger ${table}_row_count_delete after delete on ${table}
      begin update row_counts set n = n - 1 where name = '${table}'; end`);
  }
}

export async function down(knex: Knex): Promise<void> {
  const pg = knex.client.config.client === 'pg';
  for (const table of COUNTED) {
    for (const event of pg ? ['insert', 'delete', 'truncate'] : ['insert', 'delete'])
      await knex.raw(`drop trigger if exists ${table}_row_count_${event}${pg ? ` on ${table}` : ''}`);
  }
  if (pg) await knex.raw('drop function if exists latchkey_row_counts()');
  await knex.schema.dropTable('row_counts');
}
