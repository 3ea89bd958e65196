import type { Knex } from 'knex';

/**
 * Device authorization requests (RFC 8628, docs/connect-an-application.md).
 * - `device_code_hash`: the device code is a bearer secret, so only its hash is kept.
 * - `user_code`: the 8 letters the user types, upper case and without the dash; unique so that the
 *   /device page finds one request by it.
 * - `status`: `pending` → `approved` | `denied`; `used` once the tokens went out (one atomic update).
 * - `interval_s`, `polled_at`: RFC 8628 §3.5 slow_down; the interval grows by 5 s and is kept.
 * - `expires_at`: what the retention purge deletes by.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('device_codes', (t) => {
    t.string('device_code_hash', 64).primary();
    t.string('user_code', 8).notNullable().unique();
    t.string('client_id', 128).notNullable().references('client_id').inTable('clients').onDelete('CASCADE');
    t.text('scope').notNullable();
    t.string('status', 16).notNullable();
    t.string('user_id', 36).nullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('session_id', 64).nullable();
    t.bigInteger('auth_time').nullable();
    t.text('amr').nullable();
    t.integer('interval_s').notNullable();
    t.bigInteger('polled_at').nullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('device_codes');
}
