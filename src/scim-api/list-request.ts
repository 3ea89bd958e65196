import type { Request } from 'express';
import type { Projection } from '../scim/documents.ts';
import { scimErrors } from '../scim/errors.ts';
import type { ScimListRequest } from '../scim/model.ts';
import { paging } from '../scim/resources.ts';

const words = (v: unknown, name: string): string[] | undefined => {
  if (v === undefined || v === null || v === '') return undefined;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.flatMap((x) => x.split(','));
  if (typeof v === 'string') return v.split(',');
  throw scimErrors.badRequest('invalidValue', `${name} must be a comma-separated list of attribute names`);
};

const text = (v: unknown, name: string): string | undefined => {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw scimErrors.badRequest('invalidValue', `${name} must be a string`);
  return v;
};

/** `attributes` / `excludedAttributes` of a request's query (RFC 7644 §3.9): on every answer with a resource. */
export const projectionOf = (req: Request): Projection => ({
  attributes: words(req.query.attributes, 'attributes'),
  excludedAttributes: words(req.query.excludedAttributes, 'excludedAttributes'),
});

/** A list request from the query (GET) or a SearchRequest body (POST …/.search, RFC 7644 §3.4.3); `sortBy` is ignored. */
export function listRequestOf(source: Record<string, unknown>): ScimListRequest & Projection {
  return {
    filter: text(source.filter, 'filter'),
    ...paging(source.startIndex, source.count),
    attributes: words(source.attributes, 'attributes'),
    excludedAttributes: words(source.excludedAttributes, 'excludedAttributes'),
  };
}

export function searchBodyOf(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw scimErrors.badRequest('invalidSyntax', 'a .search body is a JSON SearchRequest object');
  }
  return body as Record<string, unknown>;
}
