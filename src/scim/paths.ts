/**
 * SCIM attribute paths (RFC 7644 §3.5.2 `PATH`, §3.10): `userName`, `name.givenName`,
 * `emails[type eq "work"].value`, `urn:…:enterprise:2.0:User:manager`. Attribute names are
 * case-insensitive in SCIM; the libraries that patch and filter (docs/decisions.md "SCIM libraries")
 * match some names exactly, so every path is resolved here against the schemas and written back with
 * the schema's own spelling before it reaches them.
 */
import { parse } from 'scim2-parse-filter';
import { scimErrors } from './errors.ts';
import { COMMON_ATTRIBUTES, type AttributeDefinition, type ResourceSchemas, type SchemaDefinition } from './schemas.ts';

export interface ResolvedPath {
  /** The extension's URN, or null for the core schema. */
  extension: string | null;
  attribute: AttributeDefinition;
  /** The value filter of a multi-valued attribute (`emails[type eq "work"]`), as written. */
  filter?: string;
  sub?: AttributeDefinition;
  /** The path with the schema's own spelling; an extension's attribute keeps its URN prefix. */
  canonical: string;
}

/** An attribute under an extension this server does not know: ignored, as RFC 7644 §3.3 lets a provider do. */
export const UNKNOWN_EXTENSION = Symbol('unknown extension');

const SEGMENT = /^([A-Za-z$][\w$-]*)(?:\[(.+)\])?(?:\.([A-Za-z$][\w$-]*))?$/s;

const named = (list: readonly AttributeDefinition[] | undefined, name: string) =>
  list?.find((a) => a.name.toLowerCase() === name.toLowerCase());

/** The core schema's attributes with the common ones (`id`, `externalId`, `meta`). */
export const coreAttributes = (rs: ResourceSchemas): AttributeDefinition[] => [...COMMON_ATTRIBUTES, ...rs.core.attributes];

/** The extension whose URN `key` names, without case. */
export const extensionNamed = (rs: ResourceSchemas, key: string): SchemaDefinition | undefined =>
  rs.extensions.find((e) => e.id.toLowerCase() === key.toLowerCase());

/**
 * Resolves `path` against the resource's schemas. Throws invalidPath for a malformed path or an
 * attribute the schema lacks; answers UNKNOWN_EXTENSION for an attribute of an unknown extension URN.
 */
export function resolvePath(rs: ResourceSchemas, path: string): ResolvedPath | typeof UNKNOWN_EXTENSION {
  const trimmed = path.trim();
  let rest = trimmed;
  let extension: SchemaDefinition | null = null;
  const bracket = trimmed.indexOf('[');
  const head = bracket < 0 ? trimmed : trimmed.slice(0, bracket);
  if (/^urn:/i.test(head)) {
    const colon = head.lastIndexOf(':');
    const urn = head.slice(0, colon);
    rest = trimmed.slice(colon + 1);
    if (urn.toLowerCase() !== rs.core.id.toLowerCase()) {
      extension = extensionNamed(rs, urn) ?? null;
      if (!extension) {
        // The whole path may be an extension's URN alone (`"path": "urn:…:User"` with an object value).
        if (extensionNamed(rs, head)) throw scimErrors.badRequest('invalidPath', `"${path}" names a schema, not an attribute`);
        return UNKNOWN_EXTENSION;
      }
    }
  }
  const m = SEGMENT.exec(rest);
  if (!m) throw scimErrors.badRequest('invalidPath', `"${path}" is not an attribute path`);
  const [, name, filter, subName] = m;
  const attribute = named(extension ? extension.attributes : coreAttributes(rs), name!);
  if (!attribute) throw scimErrors.badRequest('invalidPath', `"${path}": the ${rs.name} schema has no attribute "${name}"`);
  let sub: AttributeDefinition | undefined;
  if (subName) {
    sub = named(attribute.subAttributes, subName);
    if (!sub) throw scimErrors.badRequest('invalidPath', `"${path}": "${attribute.name}" has no sub-attribute "${subName}"`);
  }
  if (filter !== undefined) {
    if (!attribute.multiValued) throw scimErrors.badRequest('invalidPath', `"${path}": "${attribute.name}" is not multi-valued`);
    try {
      parse(filter);
    } catch (err) {
      throw scimErrors.badRequest('invalidPath', `"${path}": the value filter is not valid (${(err as Error).message})`);
    }
  }
  const canonical = `${extension ? `${extension.id}:` : ''}${attribute.name}${filter !== undefined ? `[${filter}]` : ''}${sub ? `.${sub.name}` : ''}`;
  return { extension: extension?.id ?? null, attribute, filter, sub, canonical };
}
