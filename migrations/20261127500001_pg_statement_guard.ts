import type { Knex } from 'knex';

/**
 * PostgreSQL only: `latchkey_guard(rows, expected)` fails the statement it is part of (SQLSTATE
 * LK001) when a guarded write changed another number of rows than expected. It lets a spend and the
 * issue it guards (spend a code or refresh token, insert the new tokens) run as one statement, one
 * round trip, with the all-or-nothing of the transaction it replaces (src/db/fused-steps.ts).
 * SQLite runs the same steps in a transaction on the connection: no round trips to save.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw(`create or replace function latchkey_guard(rows bigint, expected integer) returns integer
language plpgsql as $$
begin
  if rows <> expected then
    raise exception 'guarded write changed % rows, expected %', rows, expected using errcode = 'LK001';
  end if;
  return expected;
end $$`);
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'pg') return;
  await knex.raw('drop function if exists latchkey_guard(bigint, integer)');
}
