import type { Knex } from 'knex';

/**
 * Delegated administration (docs/admin-api.md "Roles and permissions"): the custom admin roles, each a
 * named set of permissions of the fixed list (JSON), and the owners of each application (a JSON list
 * of user ids; null: none), who may read and change it with the `app-owner` role. Built-in roles are
 * code, not rows; users keep holding roles by name in `users.roles`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('admin_roles', (t) => {
    t.string('name', 64).primary();
    t.string('description', 500).notNullable().defaultTo('');
    t.text('permissions').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
  });
  await knex.schema.alterTable('clients', (t) => {
    t.text('owners').nullable();
  });
  await knex.schema.alterTable('saml_service_providers', (t) => {
    t.text('owners').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('saml_service_providers', (t) => t.dropColumn('owners'));
  await knex.schema.alterTable('clients', (t) => t.dropColumn('owners'));
  await knex.schema.dropTable('admin_roles');
}
