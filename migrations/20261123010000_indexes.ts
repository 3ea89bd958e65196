import type { Knex } from 'knex';

/**
 * Indexes the queries rely on: the foreign keys PostgreSQL does not index by itself (deleting a user
 * or a client would scan these tables), and the admin API's keyset pagination orders, so a page is
 * one indexed range read.
 */
const indexes: Array<[string, string[]]> = [
  ['auth_codes', ['user_id']],
  ['auth_codes', ['client_id']],
  ['consents', ['client_id']],
  ['clients', ['created_at', 'client_id']],
  ['users', ['created_at', 'id']],
  ['audit_events', ['at', 'id']],
];

export async function up(knex: Knex): Promise<void> {
  for (const [table, columns] of indexes) {
    await knex.schema.alterTable(table, (t) => {
      t.index(columns);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, columns] of indexes) {
    await knex.schema.alterTable(table, (t) => {
      t.dropIndex(columns);
    });
  }
}
