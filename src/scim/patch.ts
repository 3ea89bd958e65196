/**
 * PATCH (RFC 7644 §3.5.2), applied by scim-patch (docs/decisions.md "SCIM libraries") after the
 * operations are put in the RFC's own form here, so that what Entra ID and Okta actually send works
 * (docs/scim-provisioning.md "What the endpoint supports"): `"op": "Replace"` capitalised; an
 * operation without `path` whose value names several attributes, dotted (`name.givenName`) or by URN,
 * as Okta's `{"op":"replace","value":{"active":false}}`; a `remove` of `members` with the members in
 * `value`; paths in any case; values of the wrong JSON type (`"False"`, a plain-string `manager`).
 * A group's `members` never reach the library: they are changed as a set of ids (`applySetOperations`),
 * so a PATCH naming thousands of members costs thousands of steps, not thousands of scans of them.
 */
import { scimPatch, ScimError as LibraryError, type ScimPatchOperation } from 'scim-patch';
import type { Filter } from 'scim2-parse-filter';
import { attributeValue } from './documents.ts';
import { scimErrors } from './errors.ts';
import { matches, parseValueFilter } from './filters.ts';
import { SCIM_SCHEMAS, type ScimDocument } from './model.ts';
import { extensionNamed, resolvePath, UNKNOWN_EXTENSION, type ResolvedPath } from './paths.ts';
import type { ResourceSchemas } from './schemas.ts';

type Op = 'add' | 'remove' | 'replace';

interface Operation {
  op: Op;
  path?: string;
  value?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The most operations one PATCH may carry. */
export const MAX_OPERATIONS = 1000;

/** The body of a PATCH request: its operations, each with a known `op`; 400 invalidSyntax otherwise. */
export function readPatchBody(body: unknown): Operation[] {
  if (!isObject(body)) throw scimErrors.badRequest('invalidSyntax', 'the request body must be a JSON object');
  const schemas = body.schemas;
  if (!Array.isArray(schemas) || !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === SCIM_SCHEMAS.patchOp.toLowerCase())) {
    throw scimErrors.badRequest('invalidSyntax', `a PATCH body has "schemas": ["${SCIM_SCHEMAS.patchOp}"]`);
  }
  const key = Object.keys(body).find((k) => k.toLowerCase() === 'operations');
  const list = key === undefined ? undefined : body[key];
  if (!Array.isArray(list) || list.length === 0)
    throw scimErrors.badRequest('invalidSyntax', 'a PATCH body has a non-empty "Operations" list');
  if (list.length > MAX_OPERATIONS) throw scimErrors.badRequest('invalidSyntax', `at most ${MAX_OPERATIONS} operations in one PATCH`);
  return list.map((raw, i) => {
    if (!isObject(raw)) throw scimErrors.badRequest('invalidSyntax', `operation ${i + 1} is not an object`);
    const field = (name: string) => raw[Object.keys(raw).find((k) => k.toLowerCase() === name) ?? name];
    const op = field('op');
    // Entra ID writes "Add", "Replace", "Remove".
    const lower = typeof op === 'string' ? op.toLowerCase() : '';
    if (lower !== 'add' && lower !== 'remove' && lower !== 'replace') {
      throw scimErrors.badRequest('invalidSyntax', `operation ${i + 1}: "op" is add, remove or replace, not ${JSON.stringify(op)}`);
    }
    const path = field('path');
    if (path !== undefined && path !== null && (typeof path !== 'string' || path.trim() === '')) {
      throw scimErrors.badRequest('invalidPath', `operation ${i + 1}: "path" must be a non-empty string`);
    }
    const value = field('value');
    if (lower !== 'remove' && value === undefined)
      throw scimErrors.badRequest('invalidSyntax', `operation ${i + 1}: "${lower}" needs a "value"`);
    if (lower === 'remove' && (path === undefined || path === null)) {
      throw scimErrors.badRequest('noTarget', `operation ${i + 1}: "remove" needs a "path"`);
    }
    return { op: lower, path: typeof path === 'string' ? path.trim() : undefined, value };
  });
}

/** A PATCH made ready to apply: the operations in the library's form, and a new password apart (write-only, never in a document). */
export interface PreparedPatch {
  operations: Operation[];
  password?: string;
  /** The changes of a set attribute (a group's `members`), applied by `applySetOperations`. */
  sets: SetOperation[];
}

/**
 * A change of a multi-valued attribute kept as a set of `value`s (a group's members): `values` are
 * those the operation names (an add's or replace's new ones, a remove's listed ones); `selected` are
 * those a value filter picks (`members[value eq "…"]`), as values when the filter is an `eq` on `value`
 * (or an `or` of them), else as the filter, evaluated over the members.
 */
export interface SetOperation {
  op: Op;
  path: string;
  values: string[];
  selected?: { values: string[] } | { filter: Filter };
}

/** The most values (members) one PATCH may name, and the most value filters other than `value eq` it may evaluate over them. */
export const SET_LIMITS = { values: 50_000, filters: 20 } as const;

const quote = (v: unknown) => JSON.stringify(typeof v === 'string' ? v : String(v));

/** One operation with a path, in the form the library reads: the path spelt as the schema spells it, the value typed. */
function normalisedWithPath(rs: ResourceSchemas, o: Operation & { path: string }, id: string): Operation[] | 'password' {
  const resolved = resolvePath(rs, o.path);
  if (resolved === UNKNOWN_EXTENSION) return [];
  const a = resolved.attribute;
  if (a.mutability === 'writeOnly' && a.name === 'password') return 'password';
  const target = resolved.sub ?? a;
  if (a.mutability === 'readOnly' || target.mutability === 'readOnly') {
    // Okta repeats the id it was given; that changes nothing.
    if (a.name === 'id' && o.op !== 'remove' && o.value === id) return [];
    throw scimErrors.badRequest('mutability', `"${o.path}" is read-only`);
  }
  if (o.op === 'remove') {
    if (o.value === undefined || o.value === null) return [{ op: 'remove', path: resolved.canonical }];
    if (a.multiValued && !resolved.filter && !resolved.sub) {
      // `{"op":"remove","path":"members","value":[{"value":"<id>"}]}` (Entra ID): each listed value, by its `value`.
      const items = Array.isArray(o.value) ? o.value : [o.value];
      return items.map((item) =>
        isObject(item) && item.value !== undefined
          ? { op: 'remove' as const, path: `${resolved.canonical}[value eq ${quote(item.value)}]` }
          : { op: 'remove' as const, path: resolved.canonical, value: [item] },
      );
    }
    // A single value removed "with its value" (Entra ID's manager): the attribute goes.
    return [{ op: 'remove', path: resolved.canonical }];
  }
  return [{ op: o.op, path: resolved.canonical, value: typedValue(resolved, o.value) }];
}

/** The value of an add or replace at `resolved`, in the schema's types. */
function typedValue(resolved: ResolvedPath, value: unknown): unknown {
  const a = resolved.attribute;
  if (resolved.sub) return attributeValue({ ...resolved.sub, multiValued: false }, value, resolved.canonical) ?? null;
  if (resolved.filter) return attributeValue({ ...a, multiValued: false }, value, resolved.canonical) ?? null;
  return attributeValue(a, value, resolved.canonical) ?? (a.multiValued ? [] : null);
}

/** An add or replace without a path: one operation per attribute its value names. */
function expanded(rs: ResourceSchemas, o: Operation): Operation[] {
  if (!isObject(o.value)) throw scimErrors.badRequest('invalidValue', `"${o.op}" without a "path" needs an object "value"`);
  const out: Operation[] = [];
  for (const [key, value] of Object.entries(o.value)) {
    if (key.toLowerCase() === 'schemas' || key.toLowerCase() === 'meta') continue;
    const extension = extensionNamed(rs, key);
    if (extension) {
      if (!isObject(value)) throw scimErrors.badRequest('invalidValue', `${extension.id}: must be an object`);
      for (const [inner, v] of Object.entries(value)) out.push({ op: o.op, path: `${extension.id}:${inner}`, value: v });
    } else {
      out.push({ op: o.op, path: key, value });
    }
  }
  return out;
}

/** A path that is an extension's URN alone: one operation per attribute of the extension. */
function wholeExtension(rs: ResourceSchemas, o: Operation): Operation[] | undefined {
  const extension = o.path === undefined ? undefined : extensionNamed(rs, o.path);
  if (!extension) return undefined;
  if (o.op === 'remove') return extension.attributes.map((a) => ({ op: 'remove' as const, path: `${extension.id}:${a.name}` }));
  return expanded(rs, { op: o.op, value: { [extension.id]: o.value } });
}

/** Whether a filtered path's multi-valued attribute is absent or empty (the library would call a filter on it an error). */
function noValues(doc: ScimDocument, path: string): boolean {
  const bracket = path.indexOf('[');
  if (bracket < 0) return false;
  const head = path.slice(0, bracket);
  const colon = head.lastIndexOf(':');
  const holder = colon < 0 ? doc : (doc[head.slice(0, colon)] as Record<string, unknown> | undefined);
  const list = holder?.[colon < 0 ? head : head.slice(colon + 1)];
  return !Array.isArray(list) || list.length === 0;
}

/** The values of `eq` filters on `value`, alone or joined by `or`; undefined for any other filter. */
function valuesOf(f: Filter): string[] | undefined {
  if (f.op === 'eq' && f.attrPath === 'value' && typeof f.compValue === 'string') return [f.compValue];
  if (f.op === 'or') {
    const parts = f.filters.map(valuesOf);
    return parts.every((p) => p !== undefined) ? parts.flat() : undefined;
  }
  return undefined;
}

/** One operation on a set attribute, from its resolved path. */
function setOperation(rs: ResourceSchemas, o: Operation, resolved: ResolvedPath): SetOperation {
  const where = resolved.canonical;
  if (resolved.sub && resolved.sub.name !== 'value') {
    throw scimErrors.badRequest('invalidPath', `"${o.path}": a member is named by its value (${resolved.attribute.name}[value eq "<id>"])`);
  }
  const selected = (() => {
    if (resolved.filter === undefined) return undefined;
    const filter = parseValueFilter(rs, resolved.attribute.name, resolved.filter);
    const values = valuesOf(filter);
    return values ? { values } : { filter };
  })();
  const idOf = (item: unknown, i: number): string => {
    const v = isObject(item) ? item.value : item;
    if (typeof v !== 'string' || v === '') {
      throw scimErrors.badRequest('invalidValue', `${where}[${i}]: every member needs a "value", the id of a User`);
    }
    return v;
  };
  const given = o.value === undefined || o.value === null ? [] : Array.isArray(o.value) ? o.value : [o.value];
  // An add of no members changes nothing; one through a filter says what the selected members become, so it needs one.
  if (o.op !== 'remove' && given.length === 0 && resolved.filter !== undefined) {
    throw scimErrors.badRequest('invalidValue', `${o.op} ${where}: needs a value`);
  }
  return { op: o.op, path: where, values: given.map(idOf), ...(selected ? { selected } : {}) };
}

/**
 * The operations of a PATCH in the RFC's own form, their paths resolved against the schemas (400
 * invalidPath, mutability, invalidValue here, before anything is read or written). A `password`
 * set by an operation comes apart, to be hashed outside the write's transaction; the attributes of
 * `sets` (a group's `members`) come apart as set operations. The operations an operation expands to
 * (one per attribute of a value without path, one per value removed from a list) count against
 * MAX_OPERATIONS, and the members named against SET_LIMITS: past them, 400 tooMany.
 */
export function preparePatch(
  rs: ResourceSchemas,
  operations: readonly Operation[],
  id: string,
  o: { sets?: readonly string[] } = {},
): PreparedPatch {
  let password: string | undefined;
  const plain: Operation[] = [];
  const sets: SetOperation[] = [];
  for (const op of operations) {
    const list = op.path === undefined ? expanded(rs, op) : (wholeExtension(rs, op) ?? [op]);
    for (const one of list) {
      const resolved = resolvePath(rs, one.path!);
      if (resolved !== UNKNOWN_EXTENSION && !resolved.extension && o.sets?.includes(resolved.attribute.name)) {
        sets.push(setOperation(rs, one, resolved));
        continue;
      }
      const n = normalisedWithPath(rs, { ...one, path: one.path! }, id);
      if (n === 'password') {
        if (one.op === 'remove') throw scimErrors.badRequest('mutability', 'a password cannot be removed, only replaced');
        if (typeof one.value !== 'string') throw scimErrors.badRequest('invalidValue', 'password: must be a string');
        password = one.value;
      } else {
        plain.push(...n);
      }
      if (plain.length > MAX_OPERATIONS) {
        throw scimErrors.badRequest(
          'tooMany',
          `at most ${MAX_OPERATIONS} operations in one PATCH, counting one per attribute and per value removed`,
        );
      }
    }
  }
  const named = sets.reduce((n, s) => n + s.values.length + (s.selected && 'values' in s.selected ? s.selected.values.length : 0), 0);
  if (named > SET_LIMITS.values) throw scimErrors.badRequest('tooMany', `at most ${SET_LIMITS.values} members named in one PATCH`);
  if (sets.filter((s) => s.selected && 'filter' in s.selected).length > SET_LIMITS.filters) {
    throw scimErrors.badRequest('tooMany', `at most ${SET_LIMITS.filters} member filters other than value eq in one PATCH`);
  }
  return { operations: plain, password, sets };
}

/**
 * A set attribute's values (a group's member ids) after the set operations, in order: each step costs
 * the values it names (a Set keyed by value), except a filter other than `value eq`, which is
 * evaluated once over the members. A replace or add through a filter that selects nothing is 400 noTarget.
 */
export function applySetOperations(current: readonly string[], sets: readonly SetOperation[]): string[] {
  const members = new Set(current);
  for (const s of sets) {
    let picked: string[] | undefined;
    if (s.selected) {
      const { selected } = s;
      picked =
        'values' in selected
          ? selected.values.filter((v) => members.has(v))
          : [...members].filter((value) => matches(selected.filter, { value }));
      if (s.op !== 'remove' && picked.length === 0)
        throw scimErrors.badRequest('noTarget', `${s.op} ${s.path}: no value matches the filter`);
    }
    if (s.op === 'remove') {
      if (picked) for (const v of picked) members.delete(v);
      else if (s.values.length > 0) for (const v of s.values) members.delete(v);
      else members.clear();
    } else if (s.op === 'replace' && !picked) {
      members.clear();
      for (const v of s.values) members.add(v);
    } else {
      // add; or a replace (or add) through a filter: the selected members give way to the values.
      if (picked) for (const v of picked) members.delete(v);
      for (const v of s.values) members.add(v);
    }
  }
  return [...members];
}

/** `doc` (the resource as stored) after the prepared operations; the library's refusals as SCIM errors with its scimType. */
export function applyPatch(doc: ScimDocument, prepared: PreparedPatch): ScimDocument {
  let current: ScimDocument = structuredClone(doc);
  for (const o of prepared.operations) {
    if (noValues(current, o.path!)) {
      if (o.op === 'remove') continue;
      // A filter that can match nothing: RFC 7644 §3.5.2.3's noTarget. A sub-attribute path
      // (`emails[type eq "work"].value`) is the library's to add.
      if (o.path!.endsWith(']')) throw scimErrors.badRequest('noTarget', `${o.op} ${o.path}: no value matches the filter`);
    }
    try {
      current = scimPatch(current as never, [o as ScimPatchOperation], { mutateDocument: true, treatMissingAsAdd: true });
    } catch (err) {
      if (err instanceof LibraryError) {
        const scimType = err.scimCode === 'noTarget' ? 'noTarget' : o.path?.includes('[') ? 'invalidPath' : 'invalidValue';
        throw scimErrors.badRequest(scimType, `${o.op} ${o.path ?? ''}: ${err.message}`);
      }
      throw err;
    }
  }
  return current;
}
