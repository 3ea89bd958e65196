import type { Knex } from 'knex';

/**
 * Joiners, movers and leavers (docs/directory-sync.md).
 * - `users.disabled_by`: who disabled a record (`admin`, `directory`): a directory or SCIM leaver shown
 *   enabled again is enabled again, an administrator's disabling is never undone by a sync.
 * - `directory_syncs`: one row per backend with sync on: the lease that lets one process of a cluster
 *   sync at a time, and the last pass's outcome (GraphQL `lastSync`).
 * - `saml_logouts`: signed LogoutRequests still to deliver by SOAP to the SPs of an ended session, a
 *   queue like `backchannel_logouts` (claimed with a lease, retried, survives the process).
 * - `saml_service_providers.slo_soap_url`: an SP's SOAP SingleLogoutService.
 * - `scim_tokens`: the secret tokens of SCIM clients (only their SHA-256 is kept), one backend each.
 * - `scim_groups` and their members: the groups a SCIM client pushes; members' `users.groups` carry
 *   the names, so access policies (docs/access-and-claims.md) read them like a directory's groups.
 * - `users.scim`: the SCIM representation a client wrote (without its password), served back as it was.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.string('disabled_by', 16).nullable();
    t.text('scim').nullable();
  });
  await knex.schema.createTable('directory_syncs', (t) => {
    t.string('backend', 64).primary();
    t.string('lease_holder', 64).nullable();
    t.bigInteger('lease_until').nullable();
    t.bigInteger('last_at').nullable();
    t.bigInteger('last_success_at').nullable();
    t.integer('duration_ms').nullable();
    t.integer('users').nullable();
    t.integer('created').nullable();
    t.integer('updated').nullable();
    t.integer('deprovisioned').nullable();
    t.integer('reenabled').nullable();
    t.text('error').nullable();
  });
  await knex.schema.alterTable('saml_service_providers', (t) => {
    t.string('slo_soap_url', 2000).nullable();
  });
  await knex.schema.createTable('saml_logouts', (t) => {
    t.string('id', 64).primary();
    t.string('sp_id', 36).notNullable().references('id').inTable('saml_service_providers').onDelete('CASCADE');
    t.string('user_id', 64).notNullable();
    t.string('name_id', 512).notNullable();
    t.string('name_id_format', 128).notNullable();
    t.string('session_index', 128).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('due_at').notNullable();
    t.bigInteger('claimed_until').nullable();
    t.bigInteger('created_at').notNullable();
    t.index(['due_at']);
  });
  await knex.schema.createTable('scim_tokens', (t) => {
    t.string('id', 36).primary();
    t.string('backend', 64).notNullable();
    t.string('description', 200).notNullable();
    t.string('token_hash', 64).notNullable().unique();
    t.string('created_by', 64).nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('last_used_at').nullable();
  });
  await knex.schema.createTable('scim_groups', (t) => {
    t.string('id', 36).primary();
    t.string('backend', 64).notNullable();
    t.string('display_name', 256).notNullable();
    t.string('display_name_key', 256).notNullable();
    t.string('external_id', 256).nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['backend', 'display_name_key']);
  });
  await knex.schema.createTable('scim_group_members', (t) => {
    t.string('group_id', 36).notNullable().references('id').inTable('scim_groups').onDelete('CASCADE');
    t.string('user_id', 64).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.primary(['group_id', 'user_id']);
    t.index(['user_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('scim_group_members');
  await knex.schema.dropTable('scim_groups');
  await knex.schema.dropTable('scim_tokens');
  await knex.schema.dropTable('saml_logouts');
  await knex.schema.alterTable('saml_service_providers', (t) => t.dropColumn('slo_soap_url'));
  await knex.schema.dropTable('directory_syncs');
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('scim');
    t.dropColumn('disabled_by');
  });
}
