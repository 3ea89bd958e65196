import type { Knex } from 'knex';

/**
 * Retention (docs/operating-latchkey.md): the purge finds expired rows by these indexes, a bounded batch at a time, instead
 * of scanning whole tables; `maintenance_leases` lets one process of many do each periodic job.
 * (access_tokens.expires_at and audit_events (at, id) are indexed already.)
 */
const indexes: Array<[string, string]> = [
  ['auth_codes', 'expires_at'],
  ['refresh_tokens', 'expires_at'],
  ['sso_sessions', 'expires_at'],
  ['login_throttle', 'window_start'],
];

export async function up(knex: Knex): Promise<void> {
  for (const [table, column] of indexes) {
    await knex.schema.alterTable(table, (t) => {
      t.index([column]);
    });
  }
  await knex.schema.createTable('maintenance_leases', (t) => {
    t.string('name', 64).primary();
    t.string('holder', 128).notNullable();
    t.bigInteger('expires_at').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('maintenance_leases');
  for (const [table, column] of indexes) {
    await knex.schema.alterTable(table, (t) => {
      t.dropIndex([column]);
    });
  }
}
