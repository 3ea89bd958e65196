import type { Knex } from 'knex';

/**
 * Upstream identity providers (docs/upstream-identity-providers.md): `upstream_sign_ins` holds a sign-in sent to an upstream
 * until its callback comes back: keyed by the hash of a random value in the browser's cookie (so it is
 * bound to that browser), deleted by the one statement that takes it (so a replayed callback finds
 * nothing), its state (PKCE verifier, `state`, `nonce`, where to go back) encrypted, and gone within
 * minutes by the retention purge. The upstream's users need no new column: `users.backend` is the
 * upstream's id and `users.external_id` its `sub`, unique together already.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('upstream_sign_ins', (t) => {
    t.string('id', 64).primary();
    t.string('upstream_id', 64).notNullable();
    t.text('data').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('upstream_sign_ins');
}
