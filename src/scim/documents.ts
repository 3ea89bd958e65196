/**
 * A SCIM document as a client wrote it, made into what is stored (docs/scim-provisioning.md "What the
 * endpoint supports"): attribute names in the schema's spelling, values of the schema's types (Entra
 * ID's `"active": "False"` is a boolean, its plain-string `manager` a complex value), read-only and
 * unknown attributes dropped, the write-only `password` taken out. And a stored document shown as a
 * client asked (`attributes`, `excludedAttributes`).
 */
import { scimErrors } from './errors.ts';
import type { ScimDocument } from './model.ts';
import { coreAttributes, extensionNamed, resolvePath, UNKNOWN_EXTENSION } from './paths.ts';
import type { AttributeDefinition, ResourceSchemas } from './schemas.ts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const invalid = (where: string, what: string) => scimErrors.badRequest('invalidValue', `${where}: ${what}`);

/** One value of a simple attribute, in its type; undefined for none. */
function scalar(a: AttributeDefinition, v: unknown, where: string): unknown {
  if (v === null || v === undefined) return undefined;
  switch (a.type) {
    case 'boolean':
      if (typeof v === 'boolean') return v;
      // Entra ID sends "True" and "False" (docs/scim-provisioning.md "What the endpoint supports").
      if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true';
      throw invalid(where, 'must be true or false');
    case 'integer':
    case 'decimal': {
      const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
      if (typeof n !== 'number' || !Number.isFinite(n) || (a.type === 'integer' && !Number.isInteger(n))) {
        throw invalid(where, `must be ${a.type === 'integer' ? 'an integer' : 'a number'}`);
      }
      return n;
    }
    default:
      if (typeof v === 'string') return v;
      // A number or boolean where text is expected (an employeeNumber sent as 42) is kept as its text.
      if (typeof v === 'number' || typeof v === 'boolean') return String(v);
      throw invalid(where, 'must be a string');
  }
}

/** A complex value's sub-attributes, named and typed by the schema; read-only ones dropped. */
function complexValue(a: AttributeDefinition, v: unknown, where: string): Record<string, unknown> | undefined {
  if (v === null || v === undefined) return undefined;
  // Entra ID writes the enterprise `manager` as the manager's id alone.
  if (!isObject(v) && a.subAttributes?.some((s) => s.name === 'value')) v = { value: v };
  if (!isObject(v)) throw invalid(where, 'must be an object');
  const out: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(v)) {
    const sub = a.subAttributes?.find((s) => s.name.toLowerCase() === key.toLowerCase());
    if (!sub || sub.mutability === 'readOnly') continue;
    const value = scalar(sub, raw, `${where}.${sub.name}`);
    if (value !== undefined) out[sub.name] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A value of attribute `a` in its type; undefined for none (null, an empty list). */
export function attributeValue(a: AttributeDefinition, v: unknown, where = a.name): unknown {
  if (v === null || v === undefined) return undefined;
  if (a.multiValued) {
    const list = (Array.isArray(v) ? v : [v]).map((item, i) =>
      a.type === 'complex' ? complexValue(a, item, `${where}[${i}]`) : scalar(a, item, `${where}[${i}]`),
    );
    const kept = list.filter((x) => x !== undefined);
    return kept.length > 0 ? kept : undefined;
  }
  if (Array.isArray(v)) {
    // An old Entra ID form: a single value wrapped as [{"value": …}].
    if (v.length === 1 && a.type !== 'complex' && isObject(v[0]) && 'value' in v[0]) return scalar(a, v[0].value, where);
    throw invalid(where, 'takes one value, not a list');
  }
  return a.type === 'complex' ? complexValue(a, v, where) : scalar(a, v, where);
}

function setAttributes(
  target: Record<string, unknown>,
  attributes: readonly AttributeDefinition[],
  source: Record<string, unknown>,
  where: string,
) {
  for (const [key, raw] of Object.entries(source)) {
    const a = attributes.find((x) => x.name.toLowerCase() === key.toLowerCase());
    if (!a || a.mutability === 'readOnly' || a.mutability === 'writeOnly') continue;
    const value = attributeValue(a, raw, where ? `${where}:${a.name}` : a.name);
    if (value !== undefined) target[a.name] = value;
  }
}

/** What a write stores: the document, and the password that came with it (never stored in it). */
export interface WrittenDocument {
  document: ScimDocument;
  password?: string;
}

/**
 * A POST or PUT body, or a document after PATCH: the stored form. Unknown attributes are dropped
 * (RFC 7643 §3 lets a provider ignore them), read-only ones too (`id`, `meta`, a user's `groups`).
 */
export function writtenDocument(rs: ResourceSchemas, body: unknown): WrittenDocument {
  if (!isObject(body)) throw scimErrors.badRequest('invalidSyntax', 'the request body must be a JSON object');
  const document: ScimDocument = {};
  setAttributes(document, coreAttributes(rs), body, '');
  for (const [key, raw] of Object.entries(body)) {
    const extension = extensionNamed(rs, key);
    if (extension) {
      if (raw === null || raw === undefined) continue;
      if (!isObject(raw)) throw invalid(extension.id, 'must be an object');
      const inner: Record<string, unknown> = isObject(document[extension.id]) ? (document[extension.id] as Record<string, unknown>) : {};
      setAttributes(inner, extension.attributes, raw, extension.id);
      if (Object.keys(inner).length > 0) document[extension.id] = inner;
    } else if (/^urn:/i.test(key) && key.toLowerCase() !== rs.core.id.toLowerCase()) {
      // `"urn:…:enterprise:2.0:User:department": "…"` as a key of its own.
      const resolved = resolvePath(rs, key);
      if (resolved === UNKNOWN_EXTENSION || !resolved.extension || resolved.filter || resolved.sub) continue;
      const a = resolved.attribute;
      if (a.mutability === 'readOnly') continue;
      const value = attributeValue(a, raw, resolved.canonical);
      if (value === undefined) continue;
      const inner = (document[resolved.extension] ??= {}) as Record<string, unknown>;
      inner[a.name] = value;
    }
  }
  const passwordKey = Object.keys(body).find((k) => k.toLowerCase() === 'password');
  const rawPassword = passwordKey === undefined ? undefined : body[passwordKey];
  if (rawPassword !== undefined && rawPassword !== null && typeof rawPassword !== 'string') throw invalid('password', 'must be a string');
  for (const a of rs.core.attributes) {
    if (a.required && document[a.name] === undefined) throw invalid(a.name, 'is required');
  }
  document.schemas = [rs.core.id, ...rs.extensions.filter((e) => document[e.id] !== undefined).map((e) => e.id)];
  return { document, password: typeof rawPassword === 'string' ? rawPassword : undefined };
}

/** RFC 7644 §3.4.2.5 and §3.9: the attributes a client asked for, or all but those it excluded. */
export interface Projection {
  attributes?: string[];
  excludedAttributes?: string[];
}

/** A path of `attributes` / `excludedAttributes`: [top key, sub-attribute?]. Unknown paths select nothing. */
function selection(rs: ResourceSchemas, paths: readonly string[]): Array<[string, string | undefined, AttributeDefinition]> {
  const out: Array<[string, string | undefined, AttributeDefinition]> = [];
  for (const path of paths) {
    const trimmed = path.trim();
    if (!trimmed) continue;
    const extension = extensionNamed(rs, trimmed);
    if (extension) {
      for (const a of extension.attributes) out.push([extension.id, a.name, a]);
      continue;
    }
    let resolved: ReturnType<typeof resolvePath>;
    try {
      resolved = resolvePath(rs, trimmed);
    } catch {
      continue;
    }
    if (resolved === UNKNOWN_EXTENSION || resolved.filter) continue;
    if (resolved.extension) out.push([resolved.extension, resolved.attribute.name, resolved.sub ?? resolved.attribute]);
    else out.push([resolved.attribute.name, resolved.sub?.name, resolved.sub ?? resolved.attribute]);
  }
  return out;
}

const ALWAYS = ['schemas', 'id'];

/** A full representation cut to what `p` asks for; `id` and `schemas` always stay (returned "always"). */
export function project(rs: ResourceSchemas, doc: ScimDocument, p: Projection): ScimDocument {
  if (p.attributes?.length) {
    const out: ScimDocument = {};
    for (const key of ALWAYS) if (doc[key] !== undefined) out[key] = doc[key];
    for (const [key, sub] of selection(rs, p.attributes)) {
      const value = doc[key];
      if (value === undefined) continue;
      if (sub === undefined) {
        out[key] = value;
      } else if (Array.isArray(value)) {
        const prior = Array.isArray(out[key]) ? (out[key] as Array<Record<string, unknown>>) : [];
        out[key] = value.map((v, i) => ({ ...(prior[i] ?? {}), ...(isObject(v) && v[sub] !== undefined ? { [sub]: v[sub] } : {}) }));
      } else if (isObject(value) && value[sub] !== undefined) {
        out[key] = { ...(isObject(out[key]) ? out[key] : {}), [sub]: value[sub] };
      }
    }
    // A multi-valued attribute of which only a sub-attribute was asked: entries without it say nothing.
    for (const [key, value] of Object.entries(out)) {
      if (Array.isArray(value) && value.every(isObject)) {
        const kept = value.filter((v) => Object.keys(v).length > 0);
        if (kept.length > 0) out[key] = kept;
        else delete out[key];
      }
    }
    return out;
  }
  if (p.excludedAttributes?.length) {
    const out: ScimDocument = structuredClone(doc);
    for (const [key, sub, a] of selection(rs, p.excludedAttributes)) {
      if (a.returned === 'always' || ALWAYS.includes(key)) continue;
      const value = out[key];
      if (sub === undefined) {
        delete out[key];
      } else if (Array.isArray(value)) {
        for (const v of value) if (isObject(v)) delete v[sub];
      } else if (isObject(value)) {
        delete value[sub];
        if (Object.keys(value).length === 0) delete out[key];
      }
    }
    return out;
  }
  return doc;
}
