/**
 * PATCH (RFC 7644 §3.5.2), applied by scim-patch (docs/decisions.md "SCIM libraries") after the
 * operations are put in the RFC's own form here, so that what Entra ID and Okta actually send works
 * (docs/scim-provisioning.md "What the endpoint supports"): `"op": "Replace"` capitalised; an
 * operation without `path` whose value names several attributes, dotted (`name.givenName`) or by URN,
 * as Okta's `{"op":"replace","value":{"active":false}}`; a `remove` of `members` with the members in
 * `value`; paths in any case; values of the wrong JSON type (`"False"`, a plain-string `manager`).
 */
import { scimPatch, ScimError as LibraryError, type ScimPatchOperation } from 'scim-patch';
import { attributeValue } from './documents.ts';
import { scimErrors } from './errors.ts';
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
}

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

/**
 * The operations of a PATCH in the RFC's own form, their paths resolved against the schemas (400
 * invalidPath, mutability, invalidValue here, before anything is read or written). A `password`
 * set by an operation comes apart, to be hashed outside the write's transaction.
 */
export function preparePatch(rs: ResourceSchemas, operations: readonly Operation[], id: string): PreparedPatch {
  let password: string | undefined;
  const plain: Operation[] = [];
  for (const o of operations) {
    const list = o.path === undefined ? expanded(rs, o) : (wholeExtension(rs, o) ?? [o]);
    for (const one of list) {
      const n = normalisedWithPath(rs, { ...one, path: one.path! }, id);
      if (n === 'password') {
        if (one.op === 'remove') throw scimErrors.badRequest('mutability', 'a password cannot be removed, only replaced');
        if (typeof one.value !== 'string') throw scimErrors.badRequest('invalidValue', 'password: must be a string');
        password = one.value;
      } else {
        plain.push(...n);
      }
    }
  }
  return { operations: plain, password };
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
