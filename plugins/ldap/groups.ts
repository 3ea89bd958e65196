import type { Entry } from 'ldapts';
import { first, firstRdnValue, strings } from './attributes.ts';
import type { LdapConfig } from './config.ts';
import { and, memberFilter, memberInChainFilter, or } from './filter.ts';
import type { LdapSession } from './pool.ts';

export interface Group {
  dn: string;
  name: string;
}

/** Nesting deeper than this is a loop or a mistake; stop there rather than search forever. */
const MAX_DEPTH = 10;

/** Page size for group searches: under AD's default MaxPageSize (1,000). */
const PAGE_SIZE = 500;

export type GroupSearch = NonNullable<LdapConfig['groupSearch']>;

async function searchGroups(session: LdapSession, gs: GroupSearch, memberFilter: string): Promise<Group[]> {
  const { searchEntries } = await session.search(gs.baseDN, {
    scope: gs.scope,
    filter: and(gs.filter, memberFilter),
    attributes: [gs.nameAttr],
    paged: { pageSize: PAGE_SIZE },
  });
  return searchEntries.map((e) => groupOf(e, gs));
}

/** A group entry as a `Group`: its `nameAttr`, or the value of its first RDN. */
export const groupOf = (entry: Entry, gs: GroupSearch): Group => ({
  dn: entry.dn,
  name: first(entry, gs.nameAttr) ?? firstRdnValue(entry.dn),
});

/** Without `groupSearch`: the user entry's `memberOf` values, direct memberships only. */
export const memberOfGroups = (user: Entry): Group[] => strings(user, 'memberOf').map((dn) => ({ dn, name: firstRdnValue(dn) }));

/**
 * The groups a user belongs to, directly or through nested groups. With `groupSearch` the directory is
 * asked which groups list the user's DN (never a group's member list, which may hold thousands):
 * AD resolves nesting in one search with LDAP_MATCHING_RULE_IN_CHAIN; elsewhere (OpenLDAP) each level
 * of nesting is one more search for groups that contain the groups found so far. Without
 * `groupSearch`, the user entry's `memberOf` values are used as they are.
 */
export async function resolveGroups(session: LdapSession, config: LdapConfig, user: Entry): Promise<Group[]> {
  const gs = config.groupSearch;
  if (!gs) return memberOfGroups(user);

  if (gs.nested === 'matchingRule') return searchGroups(session, gs, memberInChainFilter(gs.memberAttr, user.dn));

  const found = new Map<string, Group>();
  let frontier = [user.dn];
  for (let depth = 0; frontier.length > 0 && depth < MAX_DEPTH; depth++) {
    const groups = await searchGroups(session, gs, or(...frontier.map((dn) => memberFilter(gs.memberAttr, dn))));
    frontier = [];
    for (const g of groups) {
      const key = g.dn.toLowerCase();
      if (found.has(key)) continue; // a cycle, or reached twice
      found.set(key, g);
      frontier.push(g.dn);
    }
    if (gs.nested === 'none') break;
  }
  return [...found.values()];
}

/**
 * The admin roles of a member of `groups` (docs/admin-api.md "Roles and permissions"): `admin` for
 * members of any of `adminGroups`, and each role of `adminRoleGroups` whose groups hold them, groups
 * given by name or by DN, without case. With neither configured, none are reported (undefined): the
 * record's roles stay as the administrators set them (docs/identity-backends.md).
 */
export function rolesFor(groups: Group[], adminGroups: string[], adminRoleGroups: Record<string, string[]> = {}): string[] | undefined {
  if (adminGroups.length === 0 && Object.keys(adminRoleGroups).length === 0) return undefined;
  const held = new Set(groups.flatMap((g) => [g.name.toLowerCase(), g.dn.toLowerCase()]));
  const giving = [['admin', adminGroups] as const, ...Object.entries(adminRoleGroups)];
  return [...new Set(giving.filter(([, of]) => of.some((g) => held.has(g.toLowerCase()))).map(([role]) => role))];
}
