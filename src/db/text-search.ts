import type { Knex } from 'knex';
import { decodeCursor, pageSize, paginate, type Page } from './pagination.ts';
import { rowCount } from './row-counts.ts';

/** A list with a trigram index (migrations/20261208000000_exact_search_index.ts), and the columns of its order. */
export interface SearchedList {
  table: 'users' | 'clients';
  index: 'users_search' | 'clients_search';
  timeColumn: string;
  keyColumn: string;
}

/**
 * From this many matches on, a page read through the matches' rowids reads the list's (created_at,
 * key) index in order and stops at the page's end (about first × rows / matches entries) instead of
 * reading and sorting every match. Below it, sorting the matches is cheaper than a scan that may find
 * them only near the end of the index. Measured at a million users: 58,832 matches paged in 9 ms by
 * the scan against 35 by the sort; 41 matches in 0.2 ms by the sort against 58 by a scan.
 */
const ORDERED_SCAN_FROM = 2000;

/**
 * A search is "common" when matches² ≥ COMMON × rows: then the page is first looked for in a window
 * of the list's order after the cursor, checking each row with the LIKE (about 0.35 µs a row), rather
 * than through the rowids of every match (about 0.2 µs a match to hand over and look up). The window
 * is WINDOW_MARGIN times the rows expected to hold the page if the matches are spread evenly; when
 * they are not (a word only recent rows hold) and the window holds too few, the page is read through
 * the rowids after all. At a million users a word 58,832 of them hold ("garcia") pages in 0.5 ms
 * instead of 9.5, and its count no longer carries the 59,000 rowids (11 ms instead of 14).
 */
const COMMON = 100;
const WINDOW_MARGIN = 4;

type Condition = [string, string[]];

interface SearchPageRequest {
  first?: number | null;
  after?: string | null;
  /** The count is the page's totalCount: false when the query has filters besides the search (an owner). */
  countIsTotal: boolean;
}

/**
 * A page of `query` (the list's rows with the search's LIKE, and any other filter), in the list's
 * order. On SQLite the list's trigram index, which finds exactly the rows the LIKE finds, counts the
 * matches in one read instead of the LIKE reading every row, and chooses how the page is read: the
 * page's rows are still checked with the LIKE, so a row changed between the index's read and the
 * page's is never listed wrongly. On PostgreSQL, whose trigram indexes serve the LIKE itself, and for
 * a text under three characters, which has no trigram, the query is paged and counted as it is.
 */
export async function searchPage<T>(
  db: Knex,
  list: SearchedList,
  search: string,
  query: Knex.QueryBuilder,
  req: SearchPageRequest,
  toNode: (row: Record<string, unknown>) => T,
): Promise<Page<T>> {
  const order = { timeColumn: list.timeColumn, keyColumn: list.keyColumn, direction: 'asc' as const };
  // A bad page size or cursor is refused before the index is read.
  const first = pageSize(req.first);
  const cursor = req.after ? decodeCursor(req.after) : undefined;
  // Lowered as the LIKE's pattern is (src/db/pagination.ts likePattern): the index holds lower(column).
  const text = search.toLowerCase();
  if (db.client.config.client === 'pg' || [...text].length < 3 || text.includes('\0')) {
    return paginate(query, { ...req, ...order }, toNode);
  }
  // One FTS5 phrase: its trigrams in a row, that is, the text itself.
  const phrase = `"${text.replace(/"/g, '""')}"`;
  const counted = (await db.raw(`select count(*) as n from ${list.index} where ${list.index} match ?`, [phrase])) as Array<{ n: number }>;
  const count = Number(counted[0]?.n ?? 0);
  const opts = { ...req, ...order, total: req.countIsTotal ? async () => count : undefined };
  const byRowids = async (): Promise<Page<T>> =>
    paginate(query.clone().whereRaw(...(await rowidCondition(db, list, phrase, count))), opts, toNode);

  // With another filter (an owner) the total is counted with the page's condition: the rowids keep that count exact and short.
  if (count === 0 || !req.countIsTotal) return byRowids();
  const rows = await rowCount(db, list.table);
  if (count * count < COMMON * rows) return byRowids();
  const window = await windowEnd(db, list, cursor, Math.max(first + 1, Math.ceil((WINDOW_MARGIN * (first + 1) * rows) / count)));
  // Fewer rows than the window after the cursor: the LIKE reads them all, and that is the page.
  if (!window) return paginate(query, opts, toNode);
  const page = await paginate(query.clone().whereRaw(`(??, ??) <= (?, ?)`, [list.timeColumn, list.keyColumn, ...window]), opts, toNode);
  // A next row within the window: the page is whole. Else the rest of the list may hold more of it.
  return page.pageInfo.hasNextPage ? page : byRowids();
}

/** The rowids of the matches, as the JSON array the index gives them, as a condition on the list. */
async function rowidCondition(db: Knex, list: SearchedList, phrase: string, count: number): Promise<Condition> {
  const rows = (await db.raw(`select json_group_array(rowid) as ids from ${list.index} where ${list.index} match ?`, [phrase])) as Array<{
    ids: string;
  }>;
  // `+rowid` keeps SQLite from looking the rows up by rowid, so it walks the ORDER BY's index instead.
  const rowid = count >= ORDERED_SCAN_FROM ? '+rowid' : 'rowid';
  return [`${rowid} in (select value from json_each(?))`, [rows[0]?.ids ?? '[]']];
}

/** The order's value `size` rows after the cursor (an index-only read), or undefined when fewer rows follow it. */
async function windowEnd(
  db: Knex,
  list: SearchedList,
  after: [number, string] | undefined,
  size: number,
): Promise<[number, string] | undefined> {
  const q = db(list.table)
    .select({ at: list.timeColumn, key: list.keyColumn })
    .orderBy([list.timeColumn, list.keyColumn])
    .offset(size - 1)
    .limit(1);
  if (after) q.whereRaw(`(??, ??) > (?, ?)`, [list.timeColumn, list.keyColumn, ...after]);
  const row = (await q.first()) as { at: unknown; key: unknown } | undefined;
  return row ? [Number(row.at), String(row.key)] : undefined;
}
