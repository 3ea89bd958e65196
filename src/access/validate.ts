import safeRegex from 'safe-regex2';
import { InputError } from '../errors/service.ts';
import { compiledFilter, missingGroups } from './mappings.ts';
import {
  ATTRIBUTE_NAME_FORMATS,
  type AccessPolicy,
  type AppRole,
  type AttributeMapping,
  type AttributeNameFormat,
  CLAIM_TARGETS,
  type ClaimMapping,
  type ClaimTarget,
  EVERYONE,
  MAPPING_SOURCES,
  type MappingSource,
  RESERVED_CLAIMS,
  type ValueSource,
} from './model.ts';

/**
 * The admin's input for an application's access policy, roles and mappings, checked and given its
 * defaults (docs/access-and-claims.md). Every refusal names the field, for GraphQL and the CLI.
 */

const MAX_NAMES = 500;
const MAX_MAPPINGS = 50;
const MAX_ROLES = 100;

export interface AccessPolicyInput {
  mode: string;
  groups?: readonly string[] | null;
  users?: readonly string[] | null;
  backends?: readonly string[] | null;
}

export interface AppRoleInput {
  name: string;
  groups?: readonly string[] | null;
  users?: readonly string[] | null;
}

interface ValueSourceInput {
  source: string;
  attribute?: string | null;
  value?: string | null;
  groupFilter?: string | null;
  multiValued?: boolean | null;
}

export interface ClaimMappingInput extends ValueSourceInput {
  claim: string;
  scope?: string | null;
  targets?: readonly string[] | null;
}

export interface AttributeMappingInput extends ValueSourceInput {
  name: string;
  nameFormat?: string | null;
  friendlyName?: string | null;
}

/** A plain text of 1 to `max` characters without control characters. */
function text(field: string, value: string, max: number): string {
  if (typeof value !== 'string' || value.length < 1 || value.length > max || /[\x00-\x1f\x7f]/.test(value)) {
    throw new InputError(field, `must be 1 to ${max} characters, no control characters`);
  }
  return value;
}

/** A list of names, each checked, duplicates once. */
function names(field: string, list: readonly string[] | null | undefined, max = 512): string[] {
  const given = list ?? [];
  if (given.length > MAX_NAMES) throw new InputError(field, `at most ${MAX_NAMES}`);
  return [...new Set(given.map((n) => text(field, n, max)))];
}

/**
 * An access policy; none given is everyone. EVERYONE is always the EVERYONE constant, its lists
 * dropped: the queries store it as null, so lists kept here would vanish at the next read.
 */
export function checkAccess(field: string, input: AccessPolicyInput | null | undefined): AccessPolicy {
  if (!input) return EVERYONE;
  if (input.mode !== 'everyone' && input.mode !== 'assigned') throw new InputError(`${field}.mode`, 'must be EVERYONE or ASSIGNED');
  if (input.mode === 'everyone') return EVERYONE;
  return {
    mode: input.mode,
    groups: names(`${field}.groups`, input.groups),
    users: names(`${field}.users`, input.users, 128),
    backends: names(`${field}.backends`, input.backends, 63),
  };
}

/** An application's roles: distinct names, each held by groups and users. */
export function checkRoles(field: string, input: readonly AppRoleInput[] | null | undefined): AppRole[] {
  const roles = input ?? [];
  if (roles.length > MAX_ROLES) throw new InputError(field, `at most ${MAX_ROLES} roles`);
  const seen = new Set<string>();
  return roles.map((r, i) => {
    const name = text(`${field}.${i}.name`, r.name, 128);
    if (seen.has(name)) throw new InputError(`${field}.${i}.name`, `role ${JSON.stringify(name)} is given twice`);
    seen.add(name);
    return { name, groups: names(`${field}.${i}.groups`, r.groups), users: names(`${field}.${i}.users`, r.users, 128) };
  });
}

/**
 * Where a value comes from, with what each source needs. A group filter must compile, must not risk
 * exponential time (it runs on every token against group names from directories and upstreams:
 * safe-regex2 refuses nested repetitions such as `(a+)+`, and what its parser cannot read, such as
 * lookbehind), and a template may name only the capture groups the filter has.
 */
function checkSource(field: string, m: ValueSourceInput): ValueSource {
  if (!(MAPPING_SOURCES as readonly string[]).includes(m.source)) throw new InputError(`${field}.source`, 'is not a source');
  const source = m.source as MappingSource;
  const attribute = m.attribute == null ? null : text(`${field}.attribute`, m.attribute, 128);
  const value = m.value == null ? null : text(`${field}.value`, m.value, 2048);
  const groupFilter = m.groupFilter == null ? null : text(`${field}.groupFilter`, m.groupFilter, 512);
  if (source === 'attribute' && attribute === null) throw new InputError(`${field}.attribute`, 'is needed for the ATTRIBUTE source');
  if (source === 'static' && value === null) throw new InputError(`${field}.value`, 'is needed for the STATIC source');
  if (groupFilter !== null) {
    if (source !== 'groups') throw new InputError(`${field}.groupFilter`, 'applies to the GROUPS source only');
    let captures: number;
    try {
      captures = compiledFilter(groupFilter).captures;
    } catch (err) {
      throw new InputError(`${field}.groupFilter`, `is not a regular expression: ${(err as Error).message}`);
    }
    if (!safeRegex(groupFilter))
      throw new InputError(
        `${field}.groupFilter`,
        'could take exponential time on a long group name: nested repetitions such as (a+)+ are refused, and so is syntax the check cannot read, such as lookbehind',
      );
    const missing = value === null ? [] : missingGroups(value, captures);
    if (missing.length > 0)
      throw new InputError(
        `${field}.value`,
        `names ${missing.join(', ')} but the group filter has ${captures === 0 ? 'no capture group' : captures === 1 ? 'one capture group' : `${captures} capture groups`}`,
      );
  }
  if (value !== null && source !== 'static' && source !== 'groups')
    throw new InputError(`${field}.value`, 'applies to STATIC and GROUPS only');
  const multiValued = m.multiValued ?? (source === 'groups' || source === 'roles');
  return { source, attribute, value, groupFilter, multiValued };
}

/** A claim's name: 1 to 128 printable characters, no whitespace, control or format characters. */
function claimName(field: string, name: string): string {
  if (typeof name !== 'string' || name.length < 1 || name.length > 128 || /[\s\p{Z}\p{Cc}\p{Cf}\p{Cs}]/u.test(name))
    throw new InputError(field, 'must be 1 to 128 printable characters, no spaces or control characters');
  return name;
}

/**
 * A client's claim mappings: names OIDC reserves are refused, and a claim goes to a target once: not
 * twice with one scope, nor both with and without a scope (the one would override the other).
 */
export function checkClaimMappings(field: string, input: readonly ClaimMappingInput[] | null | undefined): ClaimMapping[] {
  const list = input ?? [];
  if (list.length > MAX_MAPPINGS) throw new InputError(field, `at most ${MAX_MAPPINGS} mappings`);
  /** The scopes (null: none) each claim is already mapped with, per target. */
  const taken = new Map<string, Set<string | null>>();
  return list.map((m, i) => {
    const at = `${field}.${i}`;
    const claim = claimName(`${at}.claim`, m.claim);
    if (RESERVED_CLAIMS.has(claim))
      throw new InputError(`${at}.claim`, `${claim} is reserved by OpenID Connect or OAuth and cannot be mapped`);
    const targets = [...new Set(m.targets ?? ['id_token', 'userinfo'])];
    if (targets.length === 0) throw new InputError(`${at}.targets`, 'needs at least one target');
    for (const t of targets)
      if (!(CLAIM_TARGETS as readonly string[]).includes(t)) throw new InputError(`${at}.targets`, `${t} is not a target`);
    const scope = m.scope == null ? null : text(`${at}.scope`, m.scope, 128);
    for (const t of targets) {
      const key = `${t} ${claim}`;
      const scopes = taken.get(key) ?? new Set<string | null>();
      if (scopes.has(scope)) throw new InputError(`${at}.claim`, `${claim} is mapped twice for ${t}`);
      if (scopes.size > 0 && (scope === null || scopes.has(null)))
        throw new InputError(
          `${at}.scope`,
          `${claim} is mapped for ${t} both with and without a scope: one would override the other; give each mapping a scope, or map it once`,
        );
      scopes.add(scope);
      taken.set(key, scopes);
    }
    return { claim, ...checkSource(at, m), scope, targets: targets as ClaimTarget[] };
  });
}

/** An SP's attribute mappings; none given (null) keeps the fixed attribute set. */
export function checkAttributeMappings(
  field: string,
  input: readonly AttributeMappingInput[] | null | undefined,
): AttributeMapping[] | null {
  if (input == null) return null;
  if (input.length > MAX_MAPPINGS) throw new InputError(field, `at most ${MAX_MAPPINGS} mappings`);
  const taken = new Set<string>();
  return input.map((m, i) => {
    const at = `${field}.${i}`;
    const name = text(`${at}.name`, m.name, 1024);
    if (taken.has(name)) throw new InputError(`${at}.name`, `${name} is mapped twice`);
    taken.add(name);
    const nameFormat = m.nameFormat ?? 'uri';
    if (!(ATTRIBUTE_NAME_FORMATS as readonly string[]).includes(nameFormat))
      throw new InputError(`${at}.nameFormat`, 'is not a name format');
    const friendlyName = m.friendlyName == null ? null : text(`${at}.friendlyName`, m.friendlyName, 256);
    return { name, nameFormat: nameFormat as AttributeNameFormat, friendlyName, ...checkSource(at, m) };
  });
}

/** A launch URL (OIDC third-party initiated login): an absolute https URL, or http, without fragment. */
export function checkLaunchUrl(field: string, uri: string | null | undefined): string | null {
  if (uri == null) return null;
  let url: URL;
  try {
    url = new URL(text(field, uri, 2000));
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new InputError(field, `${JSON.stringify(uri)} is not an absolute URL`);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash)
    throw new InputError(field, 'must be an http or https URL without fragment');
  return uri;
}

/** A user attribute's name (for a NameID), or a SAML attribute's name. */
export const checkAttributeName = (field: string, name: string | null | undefined, max = 128): string | null =>
  name == null ? null : text(field, name, max);

/**
 * An SP's `rolesAttribute`: an attribute name, and not one of the fixed attributes' (`fixed`, in any
 * case), which would put two Attributes of one Name in an assertion.
 */
export function checkRolesAttribute(field: string, name: string | null | undefined, fixed: readonly string[]): string | null {
  const checked = checkAttributeName(field, name, 1024);
  if (checked !== null && fixed.some((f) => f.toLowerCase() === checked.toLowerCase()))
    throw new InputError(field, `${checked} is one of the fixed attributes (${fixed.join(', ')}): choose another name`);
  return checked;
}
