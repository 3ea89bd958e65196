import type { Knex } from 'knex';

/**
 * SQLite: the admin lists' trigram indexes (`users_search`, `clients_search`, migration
 * 20261205000000) made to find exactly the rows the LIKE finds, so that a search's `totalCount` is
 * counted in the index alone instead of reading every matching row (src/db/text-search.ts).
 *
 * The LIKE compares `lower(column)` (ASCII letters folded, nothing else) with the search lowered: the
 * index now holds those same lowered texts, compared as they are (`case_sensitive 1`). The old index
 * folded case by Unicode's rules, so it also found rows the LIKE does not (a display name spelled with
 * the Kelvin sign for a K), and each of its matches had to be read and checked again: a word that a
 * twentieth of a million users hold cost 40 ms to count and as much again to page (bench/README.md).
 *
 * FTS5 indexes what its content table gives it: the content is a view of the lowered columns, and the
 * triggers hand it the same lowered values. PostgreSQL: nothing to do, its trigram indexes serve the
 * LIKE itself. Rebuilding reads every row once: 8 s at a million users and 100,000 clients.
 *
 * A later migration that rebuilds `users` or `clients` on SQLite (knex does so to alter or drop a
 * column: copy, drop, rename) must drop the index, its triggers and the view first and make them
 * again after: the view names the table, so the rename fails while it exists, and the copy numbers
 * the rows anew, which the index points at.
 */
const lists = [
  { table: 'users', index: 'users_search', columns: ['username_key', 'email', 'display_name'] },
  { table: 'clients', index: 'clients_search', columns: ['name', 'client_id'] },
];

async function dropIndex(knex: Knex, index: string): Promise<void> {
  for (const suffix of ['insert', 'delete', 'update']) await knex.raw(`drop trigger if exists ${index}_${suffix}`);
  await knex.raw(`drop table if exists ${index}`);
}

/** The index over `content` (a table or a view with the same columns), kept by triggers on `table`. */
async function createIndex(
  knex: Knex,
  { table, index, columns }: (typeof lists)[number],
  o: { content: string; contentRowid: string; tokenize: string; value: (row: string, column: string) => string },
): Promise<void> {
  const cols = columns.join(', ');
  const row = (prefix: string) => columns.map((c) => o.value(prefix, c)).join(', ');
  await knex.raw(
    `create virtual table ${index} using fts5(${cols}, content='${o.content}', content_rowid='${o.contentRowid}', tokenize='${o.tokenize}')`,
  );
  await knex.raw(`insert into ${index}(${index}) values ('rebuild')`);
  await knex.raw(`create trigger ${index}_insert after insert on ${table} begin
    insert into ${index}(rowid, ${cols}) values (new.rowid, ${row('new')}); end`);
  await knex.raw(`create trigger ${index}_delete after delete on ${table} begin
    insert into ${index}(${index}, rowid, ${cols}) values ('delete', old.rowid, ${row('old')}); end`);
  // Only when a searched column changes: a directory sync pass rewrites whole rows.
  await knex.raw(`create trigger ${index}_update after update of ${cols} on ${table}
    when ${columns.map((c) => `old.${c} is not new.${c}`).join(' or ')} begin
    insert into ${index}(${index}, rowid, ${cols}) values ('delete', old.rowid, ${row('old')});
    insert into ${index}(rowid, ${cols}) values (new.rowid, ${row('new')}); end`);
}

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  for (const list of lists) {
    await dropIndex(knex, list.index);
    const view = `${list.index}_text`;
    await knex.raw(
      `create view ${view} as select rowid as row_id, ${list.columns.map((c) => `lower(${c}) as ${c}`).join(', ')} from ${list.table}`,
    );
    await createIndex(knex, list, {
      content: view,
      contentRowid: 'row_id',
      tokenize: 'trigram case_sensitive 1',
      value: (row, c) => `lower(${row}.${c})`,
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  for (const list of lists) {
    await dropIndex(knex, list.index);
    await knex.raw(`drop view if exists ${list.index}_text`);
    await createIndex(knex, list, { content: list.table, contentRowid: 'rowid', tokenize: 'trigram', value: (row, c) => `${row}.${c}` });
  }
}
