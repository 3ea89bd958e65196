import { adminToken, graphql } from './admin-api.ts';
import type { Latchkey } from './latchkey.ts';
import type { BenchContext } from './measure.ts';
import { closedLoop, type Measurement } from './measurement.ts';
import type { ScaleServer } from './scale-paths.ts';

/** Callers at once on one list: an admin console's few users, not a load test. */
export const ADMIN_CALLERS = 4;

export interface AdminList {
  label: string;
  empty: Measurement;
  filled: Measurement;
}

interface ListQuery {
  label: string;
  query: string;
  /** Variables of each call; `after` is the caller's last end cursor (undefined on its first call). */
  variables(after: string | undefined): Record<string, unknown>;
  /** Walks page after page (each caller from its own first page), or asks for the first page every time. */
  pages: boolean;
}

const users = (fields: string) =>
  `query($first: Int, $after: String, $search: String) { users(first: $first, after: $after, search: $search) { totalCount pageInfo { endCursor hasNextPage } edges { cursor node { ${fields} } } } }`;
const clients = (fields: string) =>
  `query($first: Int, $after: String, $search: String) { clients(first: $first, after: $after, search: $search) { totalCount pageInfo { endCursor hasNextPage } edges { cursor node { ${fields} } } } }`;
const USER_FIELDS = 'id username email displayName disabled createdAt';
const CLIENT_FIELDS = 'clientId name grantTypes createdAt';

/**
 * What the admin console asks: the first page with its total, page after page, and a search by text,
 * of a word many records hold (a surname: 1 user in 17 at enterprise size, an application's kind: 1
 * client in 11) and of one that names a single record (a seeded user, a seeded client).
 */
const LISTS: ListQuery[] = [
  { label: 'users: first page (50) and totalCount', query: users(USER_FIELDS), variables: () => ({ first: 50 }), pages: false },
  { label: 'users: page after page (50 each)', query: users(USER_FIELDS), variables: (after) => ({ first: 50, after }), pages: true },
  {
    label: 'users: search "garcia" (many), first page',
    query: users(USER_FIELDS),
    variables: () => ({ first: 50, search: 'garcia' }),
    pages: false,
  },
  {
    label: 'users: search "bench-user-07" (one)',
    query: users(USER_FIELDS),
    variables: () => ({ first: 50, search: 'bench-user-07' }),
    pages: false,
  },
  { label: 'clients: first page (50) and totalCount', query: clients(CLIENT_FIELDS), variables: () => ({ first: 50 }), pages: false },
  { label: 'clients: page after page (50 each)', query: clients(CLIENT_FIELDS), variables: (after) => ({ first: 50, after }), pages: true },
  {
    label: 'clients: search "payroll" (many), first page',
    query: clients(CLIENT_FIELDS),
    variables: () => ({ first: 50, search: 'payroll' }),
    pages: false,
  },
  {
    label: 'clients: search "bench-web" (one)',
    query: clients(CLIENT_FIELDS),
    variables: () => ({ first: 50, search: 'bench-web' }),
    pages: false,
  },
];

type Connection = { totalCount: number; pageInfo: { endCursor: string | null; hasNextPage: boolean } };

/** One list driven by ADMIN_CALLERS callers for `seconds`, with an admin token as bench/admin-api.ts gets one. */
async function driveList(server: Latchkey, token: string, list: ListQuery, seconds: number): Promise<Measurement> {
  const cursors: Array<string | undefined> = Array.from({ length: ADMIN_CALLERS });
  return closedLoop(ADMIN_CALLERS, seconds, 'GraphQL callers', async (caller) => {
    const data = await graphql<Record<string, Connection>>(server, token, list.query, list.variables(cursors[caller]));
    const page = Object.values(data)[0]!;
    if (list.pages) cursors[caller] = page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? undefined) : undefined;
  });
}

/** Every list on the empty database's server, then on the filled one's, list by list. */
export async function adminLists(ctx: BenchContext, empty: ScaleServer, filled: ScaleServer): Promise<AdminList[]> {
  const { seconds, warmupSeconds } = ctx.options;
  // The lists are shorter runs than the hot paths': each call of a search on a large table is long.
  const run = Math.max(5, Math.round(seconds / 2));
  const tokens = { empty: await adminToken(empty.server), filled: await adminToken(filled.server) };
  const results: AdminList[] = [];
  for (const list of LISTS) {
    const measure = async (s: ScaleServer, token: string) => {
      await driveList(s.server, token, list, Math.min(warmupSeconds, 2));
      const m = await driveList(s.server, token, list, run);
      ctx.log(
        `  ${list.label} (${s.label}): ${m.rate.toFixed(0)}/s, p99 ${m.p99Ms?.toFixed(1)} ms${m.errors ? `, ${m.errors} errors: ${m.firstError}` : ''}`,
      );
      return m;
    };
    results.push({ label: list.label, empty: await measure(empty, tokens.empty), filled: await measure(filled, tokens.filled) });
  }
  return results;
}
