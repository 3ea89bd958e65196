import type { Knex } from 'knex';

/**
 * A client's `kerberos` (docs/identity-backends.md "Desktop single sign-on"): false shows its users only the login
 * form, never the Negotiate challenge. Existing clients get true, like new ones: a server without a
 * backend's `kerberos` challenges nobody whatever this says.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.boolean('kerberos').notNullable().defaultTo(true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('kerberos');
  });
}
