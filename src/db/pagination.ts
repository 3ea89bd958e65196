import type { Knex } from 'knex';
import { InputError } from '../errors/service.ts';

/** Keyset pagination over (created_at, key): stable under inserts, one indexed range read a page. */
export interface PageRequest {
  first?: number | null;
  after?: string | null;
}

export interface Page<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  totalCount: number;
}

export const MAX_PAGE = 100;

export const encodeCursor = (at: number, key: string): string => Buffer.from(JSON.stringify([at, key])).toString('base64url');

export function decodeCursor(cursor: string): [number, string] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    // The key goes into a query: PostgreSQL refuses NUL in text, and no key is longer than 255.
    if (Array.isArray(v) && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && v[1].length <= 255 && !v[1].includes('\0'))
      return [v[0], v[1]];
  } catch {
    // fall through
  }
  throw new InputError('after', 'not a cursor of this list');
}

/** The rows a page asks for: `first`, 20 if not given; an InputError outside 1 to MAX_PAGE. */
export function pageSize(first: number | null | undefined): number {
  const size = first ?? 20;
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE) throw new InputError('first', `must be 1 to ${MAX_PAGE}`);
  return size;
}

/**
 * Runs `query` (already filtered) as one page: `first` rows after the cursor, ordered by
 * (timeColumn, keyColumn) in `direction`, plus the filtered total: counted, or `total` when the
 * caller knows it without counting (an unfiltered list, src/db/row-counts.ts).
 */
export async function paginate<T>(
  query: Knex.QueryBuilder,
  opts: {
    first?: number | null;
    after?: string | null;
    timeColumn: string;
    keyColumn: string;
    direction: 'asc' | 'desc';
    total?: () => Promise<number>;
  },
  toNode: (row: Record<string, unknown>) => T,
): Promise<Page<T>> {
  const first = pageSize(opts.first);
  // The cursor is read before anything is asked: a bad one is refused without a count.
  const cursor = opts.after ? decodeCursor(opts.after) : undefined;
  const counted = opts.total
    ? opts.total()
    : query
        .clone()
        .clearSelect()
        .clearOrder()
        .count({ n: '*' })
        .first()
        .then((row) => Number((row as { n?: unknown } | undefined)?.n ?? 0));
  const page = query.clone();
  if (cursor) {
    const [at, key] = cursor;
    const op = opts.direction === 'asc' ? '>' : '<';
    // A row value, not `time > at OR (time = at AND key > k)`: both databases read the (time, key)
    // index from the cursor on, where the OR made SQLite scan it from the start to the cursor (15 ms
    // a page in the middle of a million users, against 0.1 ms).
    page.whereRaw(`(??, ??) ${op} (?, ?)`, [opts.timeColumn, opts.keyColumn, at, key]);
  }
  // The total and the page at once: on PostgreSQL two connections' round trips overlap.
  const [totalCount, rows] = await Promise.all([
    counted,
    page
      .orderBy([
        { column: opts.timeColumn, order: opts.direction },
        { column: opts.keyColumn, order: opts.direction },
      ])
      .limit(first + 1) as Promise<Array<Record<string, unknown>>>,
  ]);
  const shown = rows.slice(0, first);
  const timeKey = opts.timeColumn.split('.').pop()!;
  const keyKey = opts.keyColumn.split('.').pop()!;
  const edges = shown.map((row) => ({ cursor: encodeCursor(Number(row[timeKey]), String(row[keyKey])), node: toNode(row) }));
  return {
    edges,
    pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null },
    totalCount,
  };
}

/** A LIKE pattern for a case-insensitive substring search, its wildcards escaped (`a_b` finds exactly that). */
export const likePattern = (search: string): string => `%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
