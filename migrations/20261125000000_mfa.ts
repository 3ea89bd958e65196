import type { Knex } from 'knex';

/**
 * Multi-factor sign-in (docs/multi-factor-sign-in.md). The factors live on the user's local record, so users of every
 * backend (LDAP included) can enrol:
 * - `user_totp`: the TOTP secret, AES-256-GCM under a key derived from LATCHKEY_SECRET; `confirmed_at`
 *   null while an enrolment waits for its first code; `last_step`, the newest time step accepted, so
 *   each code is taken once (an atomic `last_step < ?` update).
 * - `recovery_codes`: keyed hashes only (HMAC under LATCHKEY_SECRET: ~50-bit codes are no match for a
 *   plain hash), each used once.
 * - `passkeys`: WebAuthn credentials, public data only (the credential id and public key).
 * - The factors a sign-in used (`amr`, RFC 8176) travel with its session, its codes and its refresh
 *   tokens, so a refreshed id_token still says how the user signed in.
 * - `clients.require_mfa`: a client that needs a second factor whatever the global policy.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_totp', (t) => {
    t.string('user_id', 36).primary().references('id').inTable('users').onDelete('CASCADE');
    t.text('secret_enc').notNullable();
    t.bigInteger('confirmed_at').nullable();
    t.bigInteger('last_step').notNullable().defaultTo(0);
    t.bigInteger('created_at').notNullable();
  });
  await knex.schema.createTable('recovery_codes', (t) => {
    t.string('code_hash', 64).primary();
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.bigInteger('used_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.index(['user_id']);
  });
  await knex.schema.createTable('passkeys', (t) => {
    t.string('credential_id', 512).primary();
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('public_key').notNullable();
    t.bigInteger('counter').notNullable().defaultTo(0);
    t.text('transports').nullable();
    t.string('name', 100).notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('last_used_at').nullable();
    t.index(['user_id']);
  });
  for (const table of ['sso_sessions', 'auth_codes', 'refresh_tokens']) {
    await knex.schema.alterTable(table, (t) => {
      t.text('amr').nullable();
    });
  }
  await knex.schema.alterTable('clients', (t) => {
    t.boolean('require_mfa').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('require_mfa');
  });
  for (const table of ['sso_sessions', 'auth_codes', 'refresh_tokens']) {
    await knex.schema.alterTable(table, (t) => {
      t.dropColumn('amr');
    });
  }
  await knex.schema.dropTable('passkeys');
  await knex.schema.dropTable('recovery_codes');
  await knex.schema.dropTable('user_totp');
}
