import type { Knex } from 'knex';

/**
 * Whether a user's email may be released as verified (docs/decisions.md "Upstream emails"). Addresses set by an
 * administrator or read from a directory are; an upstream's address that another account already
 * holds is kept but not: it never becomes `email_verified: true`, a SAML email NameID or `mail`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.boolean('email_verified').notNullable().defaultTo(true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('email_verified');
  });
}
