import type { Knex } from 'knex';

/**
 * On SQLite, the rows of a list's trigram index (migrations/20261205000000_list_search_indexes.ts)
 * that hold `search`: a condition on `rowid` that narrows a LIKE '%search%' to them, so the search
 * reads those rows instead of the whole table. None on PostgreSQL, whose trigram indexes serve the LIKE
 * itself, nor for a text under three characters, which has no trigram.
 */
export function trigramCandidates(db: Knex, index: 'users_search' | 'clients_search', search: string): [string, string[]] | undefined {
  if (db.client.config.client === 'pg' || [...search].length < 3) return undefined;
  // One FTS5 phrase: its trigrams in a row, the text itself in any case.
  return [`rowid in (select rowid from ${index} where ${index} match ?)`, [`"${search.replace(/"/g, '""')}"`]];
}
