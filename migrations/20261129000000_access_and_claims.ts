import type { Knex } from 'knex';

/**
 * Who may use which application and what it is told (docs/access-and-claims.md). Each application (an
 * OAuth client, a SAML service provider) keeps its access policy, its roles and its claim or
 * attribute mappings as JSON (null: everyone, no roles, no mappings, so every existing application
 * keeps today's behaviour); a client may have a launch URL (OIDC third-party initiated login); an SP
 * its NameID attribute and the name of its roles attribute. A user keeps the attributes its backend
 * reported (a directory's `extraAttributes`, an upstream's `extraClaims`) or an admin set.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.text('access').nullable();
    t.text('app_roles').nullable();
    t.text('claim_mappings').nullable();
    t.string('initiate_login_uri', 2000).nullable();
  });
  await knex.schema.alterTable('saml_service_providers', (t) => {
    t.text('access').nullable();
    t.text('app_roles').nullable();
    t.text('attribute_mappings').nullable();
    t.string('name_id_attribute', 256).nullable();
    t.string('roles_attribute', 256).nullable();
  });
  await knex.schema.alterTable('users', (t) => {
    t.text('attributes').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  // The code before this migration knows no transient NameIDs.
  await knex('saml_service_providers').where({ name_id_format: 'transient' }).update({ name_id_format: 'persistent' });
  await knex.schema.alterTable('users', (t) => t.dropColumn('attributes'));
  await knex.schema.alterTable('saml_service_providers', (t) => {
    for (const c of ['access', 'app_roles', 'attribute_mappings', 'name_id_attribute', 'roles_attribute']) t.dropColumn(c);
  });
  await knex.schema.alterTable('clients', (t) => {
    for (const c of ['access', 'app_roles', 'claim_mappings', 'initiate_login_uri']) t.dropColumn(c);
  });
}
