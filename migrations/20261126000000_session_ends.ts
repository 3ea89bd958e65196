import type { Knex } from 'knex';

/**
 * Sessions end with the credentials (docs/decisions.md):
 * - `auth_codes.revoked_at`: a code refused before it was redeemed (its user's credentials changed,
 *   or its session ended); the exchange then answers `invalid_grant`, and the spend of a refused code
 *   fails, so a concurrent exchange issues nothing either.
 * - `sso_sessions.proved_at`: when the session's user last proved a factor again (a password or a
 *   code asked again, a step-up); adding a factor needs a proof within five minutes ("Adding a
 *   factor"). Null: not since the sign-in (`auth_time`).
 * - `pending_sign_ins`: a right password waiting for its second step, one row each, deleted by the
 *   one statement that takes it, so a pending sign-in is used once across processes ("The pending
 *   sign-in"). Rows left behind expire within minutes and go with the next one started.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_codes', (t) => {
    t.bigInteger('revoked_at').nullable();
  });
  await knex.schema.alterTable('sso_sessions', (t) => {
    t.bigInteger('proved_at').nullable();
  });
  await knex.schema.createTable('pending_sign_ins', (t) => {
    t.string('id', 64).primary();
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.bigInteger('expires_at').notNullable();
    t.index(['user_id']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('pending_sign_ins');
  await knex.schema.alterTable('sso_sessions', (t) => {
    t.dropColumn('proved_at');
  });
  await knex.schema.alterTable('auth_codes', (t) => {
    t.dropColumn('revoked_at');
  });
}
