import type { Knex } from 'knex';

/**
 * A client's `version`, one more at every change of its row (src/clients/queries.ts): each process
 * keeps the clients it has read, and every request checks the version alone (a read of one small
 * column) before it uses the kept copy, instead of reading and decoding the whole row. A change in any
 * process is seen by the next request everywhere, as before. A timestamp would not do: two changes
 * within one millisecond (or under a frozen clock) would leave the first one kept.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.integer('version').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('version');
  });
}
