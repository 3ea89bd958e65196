import { joinResources, splitResources } from '../../clients/resource.ts';
import type { GrantResult } from './grant.ts';

/**
 * RFC 8707 2.2: a token request for a code or refresh token may name only resources its grant allows
 * (those named at authorize). These are the ones it names that the grant does not; none when the
 * grant named no resource (the request's are then the grant's).
 */
export function outsideGrant(granted: string | null, asked: string[] | undefined): string[] {
  if (granted === null || !asked) return [];
  const allowed = splitResources(granted);
  return asked.filter((r) => !allowed.includes(r));
}

/**
 * What the new tokens are for: the refresh token keeps every resource of the grant, so that a later
 * request may name another of them; the access token is for those the request named, or all.
 */
export function settledResources(granted: string | null, asked: string[] | undefined): Pick<GrantResult, 'resource' | 'audience'> {
  const named = asked ? joinResources(asked) : null;
  if (granted === null) return { resource: named };
  return { resource: granted, audience: named ?? granted };
}
