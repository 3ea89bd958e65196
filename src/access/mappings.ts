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

/**
 * The groups as values: without a filter each name as it is; with one, only the names it matches,
 * each rewritten by `template` where `$1`, `$2`… stand for the capture groups (default `$1`, or the
 * whole name when the expression has no group). Duplicates count once.
 */
export function groupValues(groups: readonly string[], filter: string | null, template: string | null): string[] {
  if (!filter) return [...new Set(groups)];
  const pattern = new RegExp(filter);
  const hasGroups = new RegExp(`${filter}|`).exec('')!.length > 1;
  const shape = template ?? (hasGroups ? '$1' : '$&');
  const out = new Set<string>();
  for (const name of groups) {
    const match = pattern.exec(name);
    if (!match) continue;
    out.add(shape.replace(/\$(\d+|&)/g, (_, n: string) => (n === '&' ? match[0] : (match[Number(n)] ?? ''))));
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
