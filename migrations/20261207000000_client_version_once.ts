import type { Knex } from 'knex';

/**
 * A client's `version` drawn from one counter for all clients, at every insert and every update, so
 * that no value is ever given twice (src/clients/queries.ts `find`). Migration 20261204000000 started
 * each new row at 0 and added one per change: a client deleted and registered again under the same
 * id (or deleted and inserted again at the SQL prompt, as a restore does) came back with a version a
 * process had kept for the old row, and that process went on using the old row's copy, its secret
 * and redirect URIs included, until the new row changed enough times to pass the old one.
 *
 * The counter starts above every version in the table, and every row is given a new one here. (A copy
 * kept of a row deleted before this migration, with a version above every row left, could still
 * match: no process of the old version runs during the upgrade, docs/operating-latchkey.md.) A
 * version an UPDATE sets itself is overwritten too, so no write can bring an old one back. On
 * PostgreSQL the column becomes a bigint, as the sequence is: every write of any client draws from it.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') {
    await knex.raw('alter table clients alter column version type bigint');
    await knex.raw('create sequence client_versions');
    await knex.raw("select setval('client_versions', (select coalesce(max(version), 0) + 1 from clients))");
    await knex.raw(`create or replace function latchkey_client_version() returns trigger
language plpgsql as $$
begin
  new.version := nextval('client_versions');
  return new;
end $$`);
    await knex.raw('drop trigger clients_version on clients');
    await knex.raw(
      'create trigger clients_version before insert or update on clients for each row execute function latchkey_client_version()',
    );
    await knex.raw('update clients set version = 0');
    return;
  }
  // One row, the last version given. The triggers change the new row again after the write (they do
  // not fire themselves again: recursive triggers are off; the insert's change fires the update's,
  // which draws once more, harmlessly).
  await knex.raw('create table client_versions (id integer primary key check (id = 1), n integer not null)');
  await knex.raw('insert into client_versions (id, n) select 1, coalesce(max(version), 0) from clients');
  await knex.raw('drop trigger clients_version');
  const next = `update client_versions set n = n + 1;
  update clients set version = (select n from client_versions) where rowid = new.rowid;`;
  await knex.raw(`create trigger clients_version_insert after insert on clients for each row
begin
  ${next}
end`);
  await knex.raw(`create trigger clients_version after update on clients for each row
begin
  ${next}
end`);
  await knex.raw('update clients set oauth_enabled = oauth_enabled');
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') {
    await knex.raw('drop trigger clients_version on clients');
    await knex.raw(`create or replace function latchkey_client_version() returns trigger
language plpgsql as $$
begin
  new.version := old.version + 1;
  return new;
end $$`);
    await knex.raw('create trigger clients_version before update on clients for each row execute function latchkey_client_version()');
    await knex.raw('drop sequence client_versions');
    await knex.raw('alter table clients alter column version type integer');
    return;
  }
  await knex.raw('drop trigger clients_version_insert');
  await knex.raw('drop trigger clients_version');
  await knex.raw(`create trigger clients_version after update on clients for each row when new.version = old.version
begin
  update clients set version = old.version + 1 where rowid = new.rowid;
end`);
  await knex.raw('drop table client_versions');
}
