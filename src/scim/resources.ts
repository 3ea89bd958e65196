/**
 * What every SCIM resource shares (RFC 7643 §3.1, RFC 7644 §3.14): `meta` with an absolute
 * `location` and a weak ETag made from `updatedAt` (which moves strictly forward on every write),
 * the `If-Match` rule, and list paging (RFC 7644 §3.4.2.4).
 */
import { scimErrors } from './errors.ts';
import { SCIM_PAGE, type ScimDocument, type ScimListPage, type ScimListRequest } from './model.ts';
import { project, type Projection } from './documents.ts';
import type { ResourceSchemas } from './schemas.ts';

export const versionOf = (updatedAt: number): string => `W/"${updatedAt.toString(36)}"`;

/** The next `updatedAt` of a resource last changed at `previous`: now, or just after `previous`. */
export const nextUpdate = (now: number, previous: number): number => Math.max(now, previous + 1);

export function meta(resourceType: 'User' | 'Group', location: string, createdAt: number, updatedAt: number): ScimDocument {
  return {
    resourceType,
    created: new Date(createdAt).toISOString(),
    lastModified: new Date(updatedAt).toISOString(),
    location,
    version: versionOf(updatedAt),
  };
}

/**
 * RFC 7644 §3.14: a write with `If-Match` goes ahead only when one of its tags (or `*`) is the
 * resource's current version; else 412. Weak and strong forms of one tag are the same tag here.
 */
export function checkIfMatch(ifMatch: string | undefined, updatedAt: number): void {
  if (ifMatch === undefined || ifMatch.trim() === '') return;
  const current = versionOf(updatedAt).replace(/^W\//, '');
  const tags = ifMatch.split(',').map((t) => t.trim().replace(/^W\//i, ''));
  if (tags.includes('*') || tags.includes(current)) return;
  throw scimErrors.preconditionFailed(`the resource has changed: its version is ${versionOf(updatedAt)}`);
}

/**
 * The most resources a filter is evaluated over in memory (what SQL cannot narrow: only an `eq` on
 * userName, externalId, id or displayName is narrowed there). Past it, 400 tooMany (RFC 7644 §3.12):
 * the client narrows the filter, rather than the server reading a whole backend for one request.
 */
export const MAX_CANDIDATES = 10_000;

/** 400 tooMany when a filter would be evaluated over more than MAX_CANDIDATES `what`. */
export function checkCandidates(n: number, what: string): void {
  if (n > MAX_CANDIDATES) {
    throw scimErrors.badRequest(
      'tooMany',
      `the filter would be evaluated over ${n} ${what}, more than the ${MAX_CANDIDATES} allowed: narrow it with an eq on ${
        what === 'users' ? 'userName, externalId or id' : 'displayName, externalId or id'
      }, alone or in an and`,
    );
  }
}

/** A page cut from a list already in order: RFC 7644 §3.4.2.4's 1-based startIndex and count. */
export function pageOf(all: readonly ScimDocument[], req: ScimListRequest): ScimListPage {
  const start = req.startIndex - 1;
  return { totalResults: all.length, startIndex: req.startIndex, resources: req.count === 0 ? [] : all.slice(start, start + req.count) };
}

/** Reads `startIndex` and `count`: below 1 is 1, a negative count 0, above the maximum the maximum (RFC 7644 §3.4.2.4). */
export function paging(startIndex: unknown, count: unknown): Pick<ScimListRequest, 'startIndex' | 'count'> {
  const integer = (v: unknown, name: string): number | undefined => {
    if (v === undefined || v === null || v === '') return undefined;
    const n = typeof v === 'number' ? v : Number(v);
    if (!Number.isFinite(n)) throw scimErrors.badRequest('invalidValue', `${name} must be an integer`);
    return Math.trunc(n);
  };
  const s = integer(startIndex, 'startIndex');
  const c = integer(count, 'count');
  return {
    // Past what a list can hold it is past the end all the same: kept an exact integer.
    startIndex: s === undefined || s < 1 ? 1 : Math.min(s, Number.MAX_SAFE_INTEGER),
    count: c === undefined ? SCIM_PAGE.default : Math.min(Math.max(c, 0), SCIM_PAGE.max),
  };
}

export const projected = (rs: ResourceSchemas, docs: ScimDocument[], p: Projection): ScimDocument[] => docs.map((d) => project(rs, d, p));
