import type { Knex } from 'knex';

/**
 * Indexes for the admin API's searches by text (`users(search:)`, `clients(search:)`: a part of a
 * name, email or id, any case). A LIKE '%…%' uses no B-tree index: at a million users each search, and
 * each page's totalCount, read the whole table (bench/README.md, "--scale"). Trigram indexes find the
 * rows that hold the text instead:
 *
 * - SQLite: an FTS5 table per list with the `trigram` tokenizer, over the searched columns of the
 *   table's rows (external content: it stores no copy), kept by triggers. src/users/queries.ts and
 *   src/clients/queries.ts look a search of three characters or more up in it, and still check each
 *   row it gives with the LIKE, so the answers are those of the LIKE alone.
 * - PostgreSQL: GIN indexes of `pg_trgm` on the same expressions the LIKEs compare, which the planner
 *   uses for them as they are. Without the extension (not installed, or no right to create it) the
 *   searches work as before, reading the table.
 *
 * And `users (disabled)`: every page of the user list counts the users (`totalCount`), and a count
 * reads the table's narrowest index whole. That was the primary key's (36-character ids): 26 ms a
 * count at a million users on SQLite; one byte and the row id an entry, 0.1 ms.
 */
const sqliteLists = [
  { table: 'users', index: 'users_search', columns: ['username_key', 'email', 'display_name'] },
  { table: 'clients', index: 'clients_search', columns: ['name', 'client_id'] },
];

const pgIndexes: Array<[string, string, string]> = [
  ['users', 'users_username_key_trgm_index', 'username_key'],
  ['users', 'users_email_trgm_index', 'lower(email)'],
  ['users', 'users_display_name_trgm_index', 'lower(display_name)'],
  ['clients', 'clients_name_trgm_index', 'lower(name)'],
  ['clients', 'clients_client_id_trgm_index', 'lower(client_id)'],
];

async function sqliteUp(knex: Knex): Promise<void> {
  for (const { table, index, columns } of sqliteLists) {
    const cols = columns.join(', ');
    const row = (prefix: string) => columns.map((c) => `${prefix}.${c}`).join(', ');
    await knex.raw(`create virtual table ${index} using fts5(${cols}, content='${table}', content_rowid='rowid', tokenize='trigram')`);
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
}

async function pgUp(knex: Knex): Promise<void> {
  const { rows } = await knex.raw<{ rows: Array<{ ok: boolean }> }>(
    `select exists (select 1 from pg_extension where extname = 'pg_trgm')
       or (exists (select 1 from pg_available_extensions where name = 'pg_trgm')
           and has_database_privilege(current_database(), 'CREATE')) as ok`,
  );
  if (!rows[0]?.ok) return;
  await knex.raw('create extension if not exists pg_trgm');
  for (const [table, name, expression] of pgIndexes) {
    await knex.raw(`create index if not exists ${name} on ${table} using gin (${expression} gin_trgm_ops)`);
  }
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.index(['disabled']);
  });
  await (knex.client.config.client === 'pg' ? pgUp(knex) : sqliteUp(knex));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropIndex(['disabled']);
  });
  if (knex.client.config.client === 'pg') {
    for (const [, name] of pgIndexes) await knex.raw(`drop index if exists ${name}`);
    return;
  }
  for (const { index } of sqliteLists) {
    for (const suffix of ['insert', 'delete', 'update']) await knex.raw(`drop trigger if exists ${index}_${suffix}`);
    await knex.raw(`drop table if exists ${index}`);
  }
}
