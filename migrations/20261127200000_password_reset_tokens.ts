import type { Knex } from 'knex';

/**
 * Password reset links (docs/password-reset-by-mail.md, "Forgotten password").
 * - `token_hash`: the link's token is a bearer secret (256 bits), so only its SHA-256 is kept.
 * - `used_at`: set by the one atomic claim that spends the link; a link whose write the directory
 *   refused or could not make is given back (set to null again).
 * - `expires_at`: 15 minutes after the request; what the retention purge deletes by.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('password_reset_tokens', (t) => {
    t.string('token_hash', 64).primary();
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.index(['expires_at']);
    t.index(['user_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('password_reset_tokens');
}
