import type { Knex } from 'knex';

/**
 * The SAML 2.0 identity provider (docs/saml-applications.md): the registered service providers; the AuthnRequest and
 * LogoutRequest IDs already seen (each is used once; kept until the request could no longer be
 * fresh); and which service providers got an assertion in which SSO session, so a single logout can
 * tell the others.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('saml_service_providers', (t) => {
    // A short id for the places that name a client in 128 characters (audit, the sign-in's flow).
    t.string('id', 36).primary();
    t.string('entity_id', 1024).notNullable().unique();
    t.string('name', 200).notNullable();
    t.text('acs_urls').notNullable();
    t.string('slo_url', 2000).nullable();
    t.text('signing_cert').nullable();
    t.text('encryption_cert').nullable();
    t.string('name_id_format', 128).notNullable();
    t.text('attributes').notNullable();
    t.boolean('sign_assertions').notNullable().defaultTo(true);
    t.boolean('sign_responses').notNullable().defaultTo(false);
    t.boolean('encrypt_assertions').notNullable().defaultTo(false);
    t.boolean('want_authn_requests_signed').notNullable().defaultTo(false);
    t.boolean('allow_idp_initiated').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
  });
  await knex.schema.createTable('saml_request_ids', (t) => {
    // sha256 of the service provider's id and the request ID: IDs are the SP's to choose, of any length.
    t.string('id_hash', 64).primary();
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at']);
  });
  await knex.schema.createTable('saml_session_participants', (t) => {
    t.string('session_id', 64).notNullable();
    t.string('sp_id', 36).notNullable().references('id').inTable('saml_service_providers').onDelete('CASCADE');
    t.string('name_id', 512).notNullable();
    t.string('name_id_format', 128).notNullable();
    t.bigInteger('expires_at').notNullable();
    t.primary(['session_id', 'sp_id']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('saml_session_participants');
  await knex.schema.dropTable('saml_request_ids');
  await knex.schema.dropTable('saml_service_providers');
}
