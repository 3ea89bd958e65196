import type { Knex } from 'knex';

// Timestamps are epoch milliseconds in bigint columns: the same value on SQLite and PostgreSQL.
// Lists (redirect URIs, scopes, roles, groups) are JSON text, read whole with their row.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('clients', (t) => {
    t.string('client_id', 128).primary();
    t.string('name', 200).notNullable();
    t.string('secret_hash', 128).nullable();
    t.boolean('confidential').notNullable();
    t.text('redirect_uris').notNullable();
    t.text('post_logout_redirect_uris').notNullable().defaultTo('[]');
    t.text('grant_types').notNullable();
    t.text('scopes').notNullable();
    t.text('roles').notNullable().defaultTo('[]');
    t.boolean('require_consent').notNullable();
    t.boolean('sso_enabled').notNullable();
    t.boolean('oauth_enabled').notNullable();
    t.integer('access_token_ttl').nullable();
    t.integer('refresh_token_ttl').nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['name']);
  });

  await knex.schema.createTable('users', (t) => {
    t.string('id', 36).primary();
    t.string('backend', 64).notNullable();
    t.string('external_id', 255).notNullable();
    t.string('username', 255).notNullable();
    // Lower-cased username: sign-in names are case-insensitive, as in LDAP and AD.
    t.string('username_key', 255).notNullable();
    t.string('email', 320).nullable();
    t.string('display_name', 255).nullable();
    t.string('password_hash', 255).nullable();
    t.text('roles').notNullable().defaultTo('[]');
    t.text('groups').notNullable().defaultTo('[]');
    t.boolean('disabled').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['backend', 'username_key']);
    t.unique(['backend', 'external_id']);
    t.index(['username_key']);
  });

  await knex.schema.createTable('sso_sessions', (t) => {
    t.string('id_hash', 64).primary();
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.bigInteger('auth_time').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['user_id']);
  });

  await knex.schema.createTable('auth_codes', (t) => {
    t.string('code_hash', 64).primary();
    t.string('client_id', 128).notNullable().references('client_id').inTable('clients').onDelete('CASCADE');
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('session_id', 64).nullable();
    t.text('redirect_uri').notNullable();
    t.text('scope').notNullable();
    t.text('nonce').nullable();
    t.string('code_challenge', 128).nullable();
    t.string('code_challenge_method', 8).nullable();
    t.bigInteger('auth_time').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('consumed_at').nullable();
    t.bigInteger('created_at').notNullable();
  });

  await knex.schema.createTable('refresh_tokens', (t) => {
    t.string('token_hash', 64).primary();
    t.string('family_id', 36).notNullable();
    t.string('client_id', 128).notNullable().references('client_id').inTable('clients').onDelete('CASCADE');
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('scope').notNullable();
    t.string('session_id', 64).nullable();
    t.string('code_hash', 64).nullable();
    t.bigInteger('auth_time').nullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('rotated_at').nullable();
    t.bigInteger('revoked_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.index(['family_id']);
    t.index(['user_id']);
    t.index(['client_id']);
    t.index(['code_hash']);
    t.index(['session_id']);
  });

  await knex.schema.createTable('access_tokens', (t) => {
    t.string('token_hash', 64).primary();
    t.string('client_id', 128).notNullable().references('client_id').inTable('clients').onDelete('CASCADE');
    t.string('user_id', 36).nullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('scope').notNullable();
    t.string('family_id', 36).nullable();
    t.string('code_hash', 64).nullable();
    t.string('session_id', 64).nullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['family_id']);
    t.index(['user_id']);
    t.index(['client_id']);
    t.index(['code_hash']);
    t.index(['session_id']);
    t.index(['expires_at']);
  });

  await knex.schema.createTable('consents', (t) => {
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('client_id', 128).notNullable().references('client_id').inTable('clients').onDelete('CASCADE');
    t.text('scopes').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.primary(['user_id', 'client_id']);
  });

  await knex.schema.createTable('login_throttle', (t) => {
    t.string('key', 320).primary();
    t.integer('failures').notNullable();
    t.bigInteger('window_start').notNullable();
    t.bigInteger('blocked_until').notNullable();
  });

  await knex.schema.createTable('signing_keys', (t) => {
    t.string('kid', 64).primary();
    t.string('alg', 16).notNullable();
    t.text('public_jwk').notNullable();
    // AES-256-GCM under a key derived from LATCHKEY_SECRET: no private key on disk in plain text.
    t.text('private_jwk_enc').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('retired_at').nullable();
  });

  await knex.schema.createTable('audit_events', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('at').notNullable();
    t.string('kind', 64).notNullable();
    t.string('actor_user_id', 36).nullable();
    t.string('actor_client_id', 128).nullable();
    t.string('user_id', 36).nullable();
    t.string('client_id', 128).nullable();
    t.string('ip', 64).nullable();
    t.string('request_id', 64).nullable();
    t.text('details').nullable();
    t.index(['kind']);
    t.index(['user_id']);
    t.index(['client_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'audit_events',
    'signing_keys',
    'login_throttle',
    'consents',
    'access_tokens',
    'refresh_tokens',
    'auth_codes',
    'sso_sessions',
    'users',
    'clients',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
