import { InputError } from '../errors/service.ts';
import { MAX_PAGE, type Page, type PageRequest } from '../db/pagination.ts';
import type { UserQueries } from '../users/queries.ts';
import { groupKey as key } from './policy.ts';

/** A group Latchkey knows of, and how many users' records hold it. */
export interface KnownGroup {
  /** The name (or DN) as its backend reports it; of several spellings, the one most users hold. */
  name: string;
  members: number;
}

/** A cursor of this list: the sort key of the last group shown (a group name can be longer than other lists' keys). */
const encode = (sortKey: string) => Buffer.from(JSON.stringify(['group', sortKey])).toString('base64url');

function decode(cursor: string): string {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && v[0] === 'group' && typeof v[1] === 'string') return v[1];
  } catch {
    // fall through
  }
  throw new InputError('after', 'not a cursor of this list');
}

/**
 * Every group of the users' records, merged without case (access policies and roles compare group
 * names without case, so `Staff` and `staff` are one group to them), with how many users hold each.
 */
export function mergeGroupSets(sets: ReadonlyArray<{ groups: readonly string[]; users: number }>): KnownGroup[] {
  const known = new Map<string, { members: number; spellings: Map<string, number> }>();
  for (const set of sets) {
    // A record holding two spellings of one group is one member of it.
    const seen = new Set<string>();
    for (const name of set.groups) {
      const k = key(name);
      let group = known.get(k);
      if (!group) known.set(k, (group = { members: 0, spellings: new Map() }));
      group.spellings.set(name, (group.spellings.get(name) ?? 0) + set.users);
      if (seen.has(k)) continue;
      seen.add(k);
      group.members += set.users;
    }
  }
  const out: KnownGroup[] = [];
  for (const group of known.values()) {
    const [name] = [...group.spellings].sort(([a, n], [b, m]) => m - n || (a < b ? -1 : a > b ? 1 : 0))[0]!;
    out.push({ name, members: group.members });
  }
  return out.sort((a, b) => (key(a.name) < key(b.name) ? -1 : key(a.name) > key(b.name) ? 1 : 0));
}

/**
 * The groups Latchkey knows (docs/access-and-claims.md): those the users' records
 * hold, a database user's as an administrator set them, a directory's or an upstream's as its last
 * sign-in reported them. For the pickers of access policies and roles.
 */
export const knownGroups = (queries: Pick<UserQueries, 'groupSets'>) => ({
  /** A page of the groups by name (without case), those whose name contains `search` (without case) only when given. */
  async page(req: PageRequest & { search?: string | null }): Promise<Page<KnownGroup>> {
    const first = req.first ?? 20;
    if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE) throw new InputError('first', `must be 1 to ${MAX_PAGE}`);
    const after = req.after ? decode(req.after) : undefined;
    const search = req.search ? key(req.search) : undefined;
    const matching = mergeGroupSets(await queries.groupSets()).filter((g) => search === undefined || key(g.name).includes(search));
    const rest = after === undefined ? matching : matching.filter((g) => key(g.name) > after);
    const edges = rest.slice(0, first).map((node) => ({ node, cursor: encode(key(node.name)) }));
    return {
      edges,
      pageInfo: { hasNextPage: rest.length > first, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: matching.length,
    };
  },
});

export type KnownGroups = ReturnType<typeof knownGroups>;
