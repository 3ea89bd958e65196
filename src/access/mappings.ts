import type { AttributeMapping, ClaimMapping, ClaimTarget, Member, ValueSource } from './model.ts';

/**
 * The values one mapping gives a user (docs/access-and-claims.md): an attribute, the groups (filtered and
 * rewritten by `groupFilter` and `value`), the application's roles, a constant, the id, the username,
 * the email. Empty when the user has none.
 */
export function mappedValues(m: ValueSource, member: Member, roles: readonly string[]): string[] {
  switch (m.source) {
    case 'attribute':
      return attributeValues(member.attributes[m.attribute ?? '']);
    case 'groups':
      return groupValues(member.groups, m.groupFilter, m.value);
    case 'roles':
      return [...roles];
    case 'static':
      return m.value === null ? [] : [m.value];
    case 'userid':
      return [member.id];
    case 'username':
      return [member.username];
    case 'email':
      return member.email ? [member.email] : [];
  }
}

/** An attribute kept on the record: a string, a number or boolean as text, or a list of them. */
function attributeValues(value: unknown): string[] {
  const list = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return list.filter((v) => ['string', 'number', 'boolean'].includes(typeof v)).map(String);
}

/** Group names longer than this are never matched against a filter (docs/access-and-claims.md "Claim mappings"). */
export const MAX_FILTERED_GROUP_NAME = 512;

/** A group filter compiled once: the expression and how many capture groups it has. */
export interface CompiledFilter {
  pattern: RegExp;
  captures: number;
}

const FILTER_CACHE_SIZE = 256;
const filters = new Map<string, CompiledFilter>();

/**
 * A filter's expression and capture count, compiled once per source and kept for the next token: the
 * most recently used 256 (a Map in use order, the oldest dropped). Throws as `new RegExp` does.
 */
export function compiledFilter(source: string): CompiledFilter {
  const cached = filters.get(source);
  if (cached) {
    filters.delete(source);
    filters.set(source, cached);
    return cached;
  }
  const pattern = new RegExp(source);
  // `source|` matches the empty string, so its match has one slot per capture group of `source`.
  const captures = new RegExp(`${source}|`).exec('')!.length - 1;
  const compiled = { pattern, captures };
  filters.set(source, compiled);
  if (filters.size > FILTER_CACHE_SIZE) filters.delete(filters.keys().next().value!);
  return compiled;
}

/** `$&`, and `$n` / `$nn` as String.prototype.replace reads them. */
const REFERENCE = /\$(&|\d\d?)/g;

/**
 * The capture group a `$n` or `$nn` reference stands for, as String.prototype.replace reads it: two
 * digits when they name a group, else the first digit followed by a literal one; 0 or above
 * `captures`: no group (the reference is literal text). Returns the group and the digit left over.
 */
function referenced(digits: string, captures: number): { index: number | null; rest: string } {
  let index = Number(digits);
  let rest = '';
  if (digits.length === 2 && index > captures) {
    index = Number(digits[0]);
    rest = digits[1]!;
  }
  return { index: index >= 1 && index <= captures ? index : null, rest };
}

/**
 * The capture groups a template names that a filter with `captures` groups lacks (`$3` with two,
 * `$1` with none), for the save to refuse: at run time they would be literal text.
 */
export function missingGroups(template: string, captures: number): string[] {
  const missing: string[] = [];
  for (const [ref, n] of template.matchAll(REFERENCE)) {
    if (n === '&') continue;
    const { index, rest } = referenced(n!, captures);
    const group = rest ? ref.slice(0, 2) : ref;
    // `$0` (and `$00`) is literal text, as in String.prototype.replace; no group is missing.
    if (index === null && Number(group.slice(1)) > 0) missing.push(group);
  }
  return missing;
}

/** A template with the references of one match filled in. */
function expand(template: string, match: RegExpExecArray, captures: number): string {
  return template.replace(REFERENCE, (ref, n: string) => {
    if (n === '&') return match[0];
    const { index, rest } = referenced(n, captures);
    return index === null ? ref : (match[index] ?? '') + rest;
  });
}

/**
 * The groups as values: without a filter each name as it is; with one, only the names it matches
 * (a name longer than 512 characters never is), each rewritten by `template` where `$1`, `$2`… stand
 * for the capture groups as String.prototype.replace reads them, `$&` for the matched text (default
 * `$1`, or the whole name when the expression has no group). A group that took no part in the match
 * gives '', and a value that ends up empty is left out. Duplicates count once.
 */
export function groupValues(groups: readonly string[], filter: string | null, template: string | null): string[] {
  if (!filter) return [...new Set(groups)];
  const { pattern, captures } = compiledFilter(filter);
  // No template and no capture group: the whole name (not `$&`, the matched part of an unanchored filter).
  const shape = template ?? (captures > 0 ? '$1' : null);
  const out = new Set<string>();
  for (const name of groups) {
    if (name.length > MAX_FILTERED_GROUP_NAME) continue;
    const match = pattern.exec(name);
    if (!match) continue;
    const value = shape === null ? name : expand(shape, match, captures);
    if (value !== '') out.add(value);
  }
  return [...out];
}

/** One value, or the list, as a claim carries it; undefined when there is nothing to carry. */
function claimValue(values: string[], multiValued: boolean): string | string[] | undefined {
  if (multiValued) return values;
  return values[0];
}

/**
 * The mapped claims of one target (id_token, userinfo, JWT access token, introspection) for a grant
 * of `scopes`: each mapping aimed at the target whose scope the grant holds. A single-valued claim
 * with no value is left out; a multi-valued one is an empty list.
 */
export function mappedClaims(
  mappings: readonly ClaimMapping[],
  target: ClaimTarget,
  scopes: readonly string[],
  member: Member,
  roles: readonly string[],
): Record<string, string | string[]> {
  const claims: Record<string, string | string[]> = {};
  for (const m of mappings) {
    if (!m.targets.includes(target) || (m.scope !== null && !scopes.includes(m.scope))) continue;
    const value = claimValue(mappedValues(m, member, roles), m.multiValued);
    if (value !== undefined) claims[m.claim] = value;
  }
  return claims;
}

/** One SAML attribute as an assertion carries it. */
export interface SamlAttribute {
  name: string;
  nameFormat: string;
  friendlyName: string | null;
  values: string[];
}

export const NAME_FORMAT_URNS = {
  uri: 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri',
  basic: 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic',
  unspecified: 'urn:oasis:names:tc:SAML:2.0:attrname-format:unspecified',
} as const;

/** The attributes of an assertion from an SP's mappings; an attribute without a value is left out. */
export function mappedAttributes(mappings: readonly AttributeMapping[], member: Member, roles: readonly string[]): SamlAttribute[] {
  const out: SamlAttribute[] = [];
  for (const m of mappings) {
    const all = mappedValues(m, member, roles);
    const values = m.multiValued ? all : all.slice(0, 1);
    if (values.length > 0) out.push({ name: m.name, nameFormat: NAME_FORMAT_URNS[m.nameFormat], friendlyName: m.friendlyName, values });
  }
  return out;
}
