import type { Knex } from 'knex';

/**
 * PKCE `plain` is refused unless a client is registered for it (RFC 9700 2.1.1, docs/connect-an-application.md): existing
 * clients get false, like new ones, so an upgrade closes the downgrade for everyone.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.boolean('allow_plain_pkce').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('allow_plain_pkce');
  });
}
