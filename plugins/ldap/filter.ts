/**
 * RFC 4515 escaping of a value placed inside a search filter: the five characters that end or change a
 * filter (`*`, `(`, `)`, `\`, NUL) become `\XX`. Without it a username such as `*)(uid=*` rewrites the
 * filter and matches someone else.
 */
export function escapeFilterValue(value: string): string {
  return value.replace(/[*()\\\0]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Fills `{name}` placeholders of a filter template with escaped values; unknown names are left as is. */
export function fillFilter(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in values ? escapeFilterValue(values[name]!) : whole));
}

/** `(&A B …)`, collapsing the one-part case. */
export const and = (...parts: string[]): string => (parts.length === 1 ? parts[0]! : `(&${parts.join('')})`);

/** `(|A B …)`, collapsing the one-part case. */
export const or = (...parts: string[]): string => (parts.length === 1 ? parts[0]! : `(|${parts.join('')})`);

/** Active Directory's LDAP_MATCHING_RULE_IN_CHAIN: membership through any depth of nested groups. */
export const IN_CHAIN = '1.2.840.113556.1.4.1941';

/** Groups whose `memberAttr` lists `dn` directly. */
export const memberFilter = (memberAttr: string, dn: string): string => `(${memberAttr}=${escapeFilterValue(dn)})`;

/** Groups that hold `dn` at any depth of nesting (AD only). */
export const memberInChainFilter = (memberAttr: string, dn: string): string => `(${memberAttr}:${IN_CHAIN}:=${escapeFilterValue(dn)})`;

/**
 * The user filter with `{username}` as a presence match (`*`): every entry a sign-in could find, and
 * only those, so whatever the filter excludes is excluded from directory sync too. The rest of the
 * filter is left exactly as written (`(userPrincipalName={username}@corp.example)` becomes a
 * substring match, as it should).
 */
export const everyUserFilter = (template: string): string => template.replace(/\{username\}/g, '*');
