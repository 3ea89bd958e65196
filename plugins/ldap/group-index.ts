import type { LdapConfig } from './config.ts';
import type { Group } from './groups.ts';

type Nested = NonNullable<LdapConfig['groupSearch']>['nested'];

/** What makes a DN more than its lowercase for `dnKey`: an escape, a space beside a separator or at either end. */
const NOT_PLAIN = /\\|[ ][,+=]|[,+=][ ]|^[ ]|[ ]$/;

/** The characters `dnKey` writes escaped, whichever way the directory escaped them (`\,` or `\2C`). */
const SPECIAL = /[\\,+"<>;=]/g;

/**
 * A DN as a key for comparing DNs the way the directory would, near enough: case-insensitively, with
 * the spaces around RDN separators dropped (`CN=Eng, OU=Groups` is `cn=eng,ou=groups`), and escapes
 * made one (slapd names an entry `uid=a\2Cb` and lists it as a member as `uid=a\,b`). An escaped space
 * is part of a value and kept.
 */
export function dnKey(dn: string): string {
  if (!NOT_PLAIN.test(dn)) return dn.toLowerCase();
  let out = '';
  let value = '';
  let hex: number[] = [];
  let spaces = '';
  const text = (s: string) => {
    if (hex.length > 0) value += Buffer.from(hex).toString('utf8');
    hex = [];
    value += spaces + s;
    spaces = '';
  };
  for (let i = 0; i < dn.length; i++) {
    const c = dn[i]!;
    if (c === '\\' && i + 1 < dn.length) {
      const pair = dn.slice(i + 1, i + 3);
      if (/^[0-9a-f]{2}$/i.test(pair)) {
        if (spaces) text('');
        hex.push(Number.parseInt(pair, 16));
        i += 2;
      } else text(dn[++i]!);
    } else if (c === ' ') {
      // Unescaped spaces count only between characters of a value.
      if (value.length > 0 || hex.length > 0) spaces += c;
    } else if (c === ',' || c === '+' || c === '=') {
      spaces = '';
      text('');
      out += value.replace(SPECIAL, (x) => `\\${x}`) + c;
      value = '';
    } else text(c);
  }
  spaces = '';
  text('');
  return (out + value.replace(SPECIAL, (x) => `\\${x}`)).toLowerCase();
}

/**
 * Every group of the directory with its members, held in memory for one sync pass so that a user's
 * groups cost no search of their own (one search per user would be 100,000 round trips). Nesting is
 * resolved here as `nested` says: `recursive` and `matchingRule` both mean the transitive closure
 * (a group that lists a group gives its members that group's groups too), cut at cycles; `none`
 * gives direct memberships only. Only the groups `groupSearch` finds count, at every level, as at
 * a sign-in's `recursive` search.
 */
export class GroupIndex {
  private readonly groups: Group[] = [];
  /** Member DN (as `dnKey`) → the groups that list it directly, by position in `groups`. */
  private readonly listedIn = new Map<string, number[]>();
  /** Group position → that group and every group containing it at any depth, computed once when first asked. */
  private readonly closures = new Map<number, Group[]>();
  /**
   * The groups of members in several groups, by their direct groups' positions: many users share a
   * combination (a team and its site), and a pass asks for 100,000 users' groups. The lists are
   * shared, and read only.
   */
  private readonly combined = new Map<string, Group[]>();

  constructor(private readonly nested: Nested) {}

  get size(): number {
    return this.groups.length;
  }

  add(group: Group, members: readonly string[]): void {
    const at = this.groups.push(group) - 1;
    for (const member of members) {
      const key = dnKey(member);
      const list = this.listedIn.get(key);
      if (!list) this.listedIn.set(key, [at]);
      else if (list[list.length - 1] !== at) list.push(at); // a member listed twice in one group
    }
  }

  /** The groups of the entry `dn`: each direct one, then those that contain it. */
  groupsOf(dn: string): Group[] {
    const direct = this.listedIn.get(dnKey(dn));
    if (!direct) return [];
    if (this.nested === 'none') return direct.map((i) => this.groups[i]!);
    if (direct.length === 1) return this.closure(direct[0]!);
    const key = direct.join(',');
    let groups = this.combined.get(key);
    if (!groups) {
      const seen = new Set<Group>();
      for (const i of direct) for (const g of this.closure(i)) seen.add(g);
      groups = [...seen];
      this.combined.set(key, groups);
    }
    return groups;
  }

  /** Breadth first from the group at `start` up through the groups that list it; a group already reached ends its branch (a cycle). */
  private closure(start: number): Group[] {
    let found = this.closures.get(start);
    if (found) return found;
    const reached = new Set([start]);
    const order = [start];
    for (let i = 0; i < order.length; i++) {
      for (const parent of this.listedIn.get(dnKey(this.groups[order[i]!]!.dn)) ?? []) {
        if (reached.has(parent)) continue;
        reached.add(parent);
        order.push(parent);
      }
    }
    found = order.map((i) => this.groups[i]!);
    this.closures.set(start, found);
    return found;
  }
}
