import type { Knex } from 'knex';

/** What a list's trigram index found for a search: how many rows, and the condition that selects them. */
export interface TrigramMatches {
  count: number;
  /**
   * A WHERE condition on the list's table, beside the LIKE: the page's rows are still checked (a few
   * dozen), so a row changed between the index's read and the page's is never listed wrongly.
   */
  condition: [string, string[]];
}

/**
 * From this many matches on, a page reads the list's (created_at, key) index in order and stops at the
 * page's end (about first × rows / matches entries) instead of reading and sorting every match. Below
 * it, sorting the matches is cheaper than a scan that may find them only near the end of the index.
 * Measured at a million users: 58,832 matches paged in 9 ms by the scan against 35 by the sort; 41
 * matches in 0.2 ms by the sort against 58 by a scan.
 */
const ORDERED_SCAN_FROM = 2000;

/**
 * On SQLite, the rows of a list whose searched columns hold `search`, looked up in the list's trigram
 * index (migrations/20261208000000_exact_search_index.ts), which finds exactly the rows the LIKE
 * finds: the count is the search's `totalCount` as it stands, and the rowids, passed back as the JSON
 * array the index gave, select the page. One read of the index per search, where a LIKE reads every
 * row of the table, or every row the index named to check it. None on PostgreSQL, whose trigram
 * indexes serve the LIKE itself, nor for a text under three characters, which has no trigram.
 */
export async function trigramMatches(
  db: Knex,
  index: 'users_search' | 'clients_search',
  search: string,
): Promise<TrigramMatches | undefined> {
  // Lowered as the LIKE's pattern is (src/db/pagination.ts likePattern): the index holds lower(column).
  const text = search.toLowerCase();
  if (db.client.config.client === 'pg' || [...text].length < 3 || text.includes('\0')) return undefined;
  // One FTS5 phrase: its trigrams in a row, that is, the text itself.
  const rows = (await db.raw(`select count(*) as n, json_group_array(rowid) as ids from ${index} where ${index} match ?`, [
    `"${text.replace(/"/g, '""')}"`,
  ])) as Array<{ n: number; ids: string }>;
  const count = Number(rows[0]?.n ?? 0);
  // `+rowid` keeps SQLite from looking the rows up by rowid, so it walks the ORDER BY's index instead.
  const rowid = count >= ORDERED_SCAN_FROM ? '+rowid' : 'rowid';
  return { count, condition: [`${rowid} in (select value from json_each(?))`, [rows[0]?.ids ?? '[]']] };
}
