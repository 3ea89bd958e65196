import type { Knex } from 'knex';

/**
 * Back-channel logout (docs/connect-an-application.md): a client's `backchannel_logout_uri`, and the queue of logout
 * notices still to deliver. The queue lives here, not in memory, so a notice written with the
 * session's end survives the process that wrote it; `claimed_until` is the lease a worker takes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.string('backchannel_logout_uri', 2000).nullable();
  });
  await knex.schema.createTable('backchannel_logouts', (t) => {
    t.string('id', 64).primary();
    t.string('client_id', 128).notNullable().references('client_id').inTable('clients').onDelete('CASCADE');
    t.string('user_id', 64).notNullable();
    t.string('sid', 64).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('due_at').notNullable();
    t.bigInteger('claimed_until').nullable();
    t.bigInteger('created_at').notNullable();
    t.index(['due_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('backchannel_logouts');
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('backchannel_logout_uri');
  });
}
