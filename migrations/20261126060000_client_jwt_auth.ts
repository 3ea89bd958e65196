import type { Knex } from 'knex';

/**
 * JWT client authentication (RFC 7523, docs/connect-an-application.md). `token_endpoint_auth_method` stays NULL for clients
 * registered before it existed: they keep using Basic or post as before. `secret_enc` holds the
 * secret of a `client_secret_jwt` client, encrypted under LATCHKEY_SECRET (HS256 needs the secret
 * itself). `client_assertion_jtis` remembers each assertion's jti until it expires, so a replay
 * is refused in every process: the primary key makes the insert the check.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.string('token_endpoint_auth_method', 32).nullable();
    t.text('jwks').nullable();
    t.string('jwks_uri', 2000).nullable();
    t.text('secret_enc').nullable();
  });
  await knex.schema.createTable('client_assertion_jtis', (t) => {
    t.string('client_id', 128).notNullable().references('client_id').inTable('clients').onDelete('CASCADE');
    t.string('jti', 256).notNullable();
    t.bigInteger('expires_at').notNullable();
    t.primary(['client_id', 'jti']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('client_assertion_jtis');
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('token_endpoint_auth_method');
    t.dropColumn('jwks');
    t.dropColumn('jwks_uri');
    t.dropColumn('secret_enc');
  });
}
