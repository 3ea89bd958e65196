import type { Knex } from 'knex';

/**
 * The `index` of each AssertionConsumerService an SP's metadata declared (JSON, in the order of
 * `acs_urls`), so that an AuthnRequest's `AssertionConsumerServiceIndex` finds its URL. Null for an SP
 * registered by explicit URLs: their index is their position in the list.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('saml_service_providers', (t) => {
    t.text('acs_indexes').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('saml_service_providers', (t) => {
    t.dropColumn('acs_indexes');
  });
}
