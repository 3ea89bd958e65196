import { isResourceUri, joinResources, splitResources } from '../clients/resource.ts';
import { oauthError } from '../errors/oauth.ts';
import type { Params } from '../http/params.ts';

/** Resources in one request at most; joined, they fit the 2000 characters the tables keep. */
const MAX_RESOURCES = 10;
const MAX_RESOURCES_LENGTH = 2000;

/**
 * RFC 8707 `resource`, once or repeated: absent, or absolute URIs without fragment; anything else is
 * `invalid_target`. Duplicates count once.
 */
export function resourcesParam(p: Params): string[] | undefined {
  const value = p.resource;
  if (value === undefined) return undefined;
  const list = [...new Set(splitResources(value))];
  if (list.length === 0 || !list.every(isResourceUri))
    throw oauthError('invalid_target', 'resource must be an absolute URI without a fragment');
  if (list.length > MAX_RESOURCES || joinResources(list).length > MAX_RESOURCES_LENGTH) {
    throw oauthError('invalid_target', `at most ${MAX_RESOURCES} resources of ${MAX_RESOURCES_LENGTH} characters together`);
  }
  return list;
}
