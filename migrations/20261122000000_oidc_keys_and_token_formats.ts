import type { Knex } from 'knex';

/**
 * Key rotation (a key is published before it signs: `activates_at`) and per-client token formats:
 * the id_token's signing algorithm and opaque or JWT (RFC 9068) access tokens.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('signing_keys', (t) => {
    t.bigInteger('activates_at').nullable();
  });
  await knex('signing_keys').update({ activates_at: knex.ref('created_at') });
  await knex.schema.alterTable('clients', (t) => {
    t.string('id_token_alg', 16).notNullable().defaultTo('RS256');
    t.string('access_token_format', 16).notNullable().defaultTo('opaque');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('access_token_format');
    t.dropColumn('id_token_alg');
  });
  await knex.schema.alterTable('signing_keys', (t) => {
    t.dropColumn('activates_at');
  });
}
