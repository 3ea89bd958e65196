import type { Knex } from 'knex';

/**
 * Indexes on columns that are empty for most rows (a client_credentials token has no user, family,
 * code or session; many audit events name no user or client) hold only the rows that have a value:
 * a token insert then updates fewer indexes, and every lookup by those columns (`x = ?`) still uses
 * them, on SQLite and PostgreSQL alike.
 */
const partial: Array<[string, string]> = [
  ['access_tokens', 'family_id'],
  ['access_tokens', 'code_hash'],
  ['access_tokens', 'session_id'],
  ['access_tokens', 'user_id'],
  ['refresh_tokens', 'code_hash'],
  ['refresh_tokens', 'session_id'],
  ['audit_events', 'user_id'],
  ['audit_events', 'client_id'],
];

const name = (table: string, column: string) => `${table}_${column}_index`;

export async function up(knex: Knex): Promise<void> {
  for (const [table, column] of partial) {
    await knex.raw(`drop index if exists ${name(table, column)}`);
    await knex.raw(`create index ${name(table, column)} on ${table} (${column}) where ${column} is not null`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, column] of partial) {
    await knex.raw(`drop index if exists ${name(table, column)}`);
    await knex.raw(`create index ${name(table, column)} on ${table} (${column})`);
  }
}
