import type { Knex } from 'knex';

/**
 * docs/connect-an-application.md: a client's error-code style (`maxkey`, the interface document's, for every existing
 * client, so nothing changes for them) and its default audience (RFC 8707); the resource an
 * authorization request named, bound to its code and kept by its refresh tokens, and the audience each access token was issued for,
 * for introspection.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.string('error_codes', 16).notNullable().defaultTo('maxkey');
    t.string('default_audience', 2000).nullable();
  });
  await knex.schema.alterTable('auth_codes', (t) => {
    t.string('resource', 2000).nullable();
  });
  await knex.schema.alterTable('refresh_tokens', (t) => {
    t.string('resource', 2000).nullable();
  });
  await knex.schema.alterTable('access_tokens', (t) => {
    t.string('audience', 2000).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('access_tokens', (t) => {
    t.dropColumn('audience');
  });
  await knex.schema.alterTable('refresh_tokens', (t) => {
    t.dropColumn('resource');
  });
  await knex.schema.alterTable('auth_codes', (t) => {
    t.dropColumn('resource');
  });
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('error_codes');
    t.dropColumn('default_audience');
  });
}
