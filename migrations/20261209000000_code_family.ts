import type { Knex } from 'knex';

/**
 * A spent code names the token family issued from it (`auth_codes.family_id`), and the tokens issued
 * from a code no longer carry the code's hash. A replayed code revokes what it issued by that family
 * (RFC 6749 §4.1.2), whose index grows at its end (the family id is time-ordered), instead of by the
 * code's hash, which put a random page of two more indexes into every code exchange's commit (issue
 * 37, docs/performance.md). Tokens issued before this keep their `code_hash`, and a replay still
 * revokes by it: the two partial `code_hash` indexes stay, holding only those.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_codes', (t) => {
    t.string('family_id', 36).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_codes', (t) => {
    t.dropColumn('family_id');
  });
}
