import type { Knex } from 'knex';

/**
 * WebAuthn challenges, kept on the server so each is used once (docs/decisions.md, "Passkeys"): a challenge that
 * travelled sealed in the page could be answered again for as long as it lived, and a synced passkey,
 * whose signature counter stays 0, could not tell a replayed assertion from a new one.
 * - `challenge`: as sent to the browser (random, not a secret).
 * - `purpose`: `register` or `login`, so one ceremony's challenge cannot serve the other.
 * - `user_id`: the user registering, or the user expected at a second step; null for a passkey alone.
 * - `used_at`: set by the one atomic update that takes the challenge; `expires_at` is what the
 *   retention purge deletes by.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webauthn_challenges', (t) => {
    t.string('challenge', 128).primary();
    t.string('purpose', 16).notNullable();
    t.string('user_id', 36).nullable().references('id').inTable('users').onDelete('CASCADE');
    t.bigInteger('used_at').nullable();
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webauthn_challenges');
}
