import type { Knex } from 'knex';

/**
 * A client's `version`, one more at every change of its row (src/clients/queries.ts `find`): each
 * process keeps the clients it has read, and every request checks the version alone (a read of one
 * small column) before it uses the kept copy, instead of reading and decoding the whole row. A change
 * is seen by the next request everywhere, as before. The database raises it, by a trigger, so that no
 * write can forget to: not Latchkey's own, nor an operator's `UPDATE` at the SQL prompt. A timestamp
 * would not do: two changes within one millisecond (or under a frozen clock) would keep the first.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.integer('version').notNullable().defaultTo(0);
  });
  if (knex.client.config.client === 'pg') {
    await knex.raw(`create or replace function latchkey_client_version() returns trigger
language plpgsql as $$
begin
  new.version := old.version + 1;
  return new;
end $$`);
    await knex.raw('create trigger clients_version before update on clients for each row execute function latchkey_client_version()');
    return;
  }
  // SQLite changes the row again after the update (triggers do not fire themselves again: recursive
  // triggers are off), unless the update set the version itself.
  await knex.raw(`create trigger clients_version after update on clients for each row when new.version = old.version
begin
  update clients set version = old.version + 1 where rowid = new.rowid;
end`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop trigger if exists clients_version${knex.client.config.client === 'pg' ? ' on clients' : ''}`);
  if (knex.client.config.client === 'pg') await knex.raw('drop function if exists latchkey_client_version()');
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('version');
  });
}
