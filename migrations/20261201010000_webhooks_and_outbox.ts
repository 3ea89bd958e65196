import type { Knex } from 'knex';

/**
 * Audit events going out (docs/decisions.md "Events out"), and webhooks (docs/webhooks.md).
 *
 * The queue is the audit trail itself: each sink (a webhook endpoint, the syslog sink) keeps a cursor
 * in `event_sinks`, the position of the last event it is done with, so an event is queued by the very
 * insert that records it. The stream's order is (`txid`, `id`): on PostgreSQL `txid` is the recording
 * transaction's id (a reader takes only events of transactions older than every transaction still
 * running, so none commits later behind its cursor); on SQLite, whose writers commit one at a time in
 * id order, it stays 0 and `id` alone orders.
 */
export async function up(knex: Knex): Promise<void> {
  const pg = knex.client.config.client === 'pg';
  await knex.schema.alterTable('audit_events', (t) => {
    // 0 for the events recorded before: every sink starts after them.
    t.bigInteger('txid').notNullable().defaultTo(0);
  });
  if (pg) {
    await knex.raw('alter table audit_events alter column txid set default (pg_current_xact_id()::text::bigint)');
    await knex.raw('create index audit_events_txid_id_index on audit_events (txid, id)');
  }

  await knex.schema.createTable('event_sinks', (t) => {
    // `webhook:<id>`, `syslog`.
    t.string('name', 200).primary();
    // The position of the last event the sink is done with (delivered, skipped or given up).
    t.bigInteger('txid').notNullable().defaultTo(0);
    t.bigInteger('event_id').notNullable().defaultTo(0);
    // Tries of the next event so far, when its sink retries it, and when it is due again.
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('due_at').notNullable().defaultTo(0);
    // Since when sending has failed without a success in between; null when the last send succeeded.
    t.bigInteger('failing_since').nullable();
    // The process sending for the sink: one at a time, so the order holds.
    t.string('lease_holder', 100).nullable();
    t.bigInteger('lease_until').nullable();
    t.bigInteger('created_at').notNullable();
  });

  await knex.schema.createTable('webhooks', (t) => {
    t.string('id', 36).primary();
    t.string('url', 2000).notNullable();
    // A JSON array of kind patterns (`user.*`, `login.failure`, `*`).
    t.text('events').notNullable();
    t.string('description', 200).notNullable().defaultTo('');
    // The signing secret, encrypted with a key derived from LATCHKEY_SECRET: it must be used to sign.
    t.text('secret_enc').notNullable();
    t.string('created_by', 128).nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
  });

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('id').primary();
    t.string('webhook_id', 36).notNullable().references('id').inTable('webhooks').onDelete('CASCADE');
    t.bigInteger('event_id').notNullable();
    t.string('kind', 64).notNullable();
    t.integer('attempt').notNullable();
    // delivered, failed, pending (the next try, not yet made), given_up.
    t.string('status', 16).notNullable();
    t.integer('http_status').nullable();
    t.string('error', 200).nullable();
    t.bigInteger('at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.unique(['webhook_id', 'event_id', 'attempt']);
    t.index(['webhook_id', 'at', 'id']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhooks');
  await knex.schema.dropTable('event_sinks');
  if (knex.client.config.client === 'pg') await knex.raw('drop index if exists audit_events_txid_id_index');
  await knex.schema.alterTable('audit_events', (t) => {
    t.dropColumn('txid');
  });
}
