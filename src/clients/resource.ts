/**
 * RFC 8707 2: a resource indicator is an absolute URI without a fragment. Length and control
 * characters are refused too, as for redirect URIs: the value ends up in tokens and the database.
 */
export function isResourceUri(value: string): boolean {
  if (value.length > 2000 || /[\x00-\x20\x7f]/.test(value) || value.includes('#')) return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Several resources (RFC 8707 lets a request repeat `resource`) kept as one value, as `scope` is:
 * joined by a space, which no resource URI holds.
 */
export const joinResources = (list: string[]): string => list.join(' ');
export const splitResources = (value: string): string[] => value.split(' ').filter(Boolean);

/** An `aud` claim (RFC 7519 4.1.3, RFC 7662): one resource as a string, several as an array. */
export function audClaim(value: string): string | string[] {
  const list = splitResources(value);
  return list.length === 1 ? list[0]! : list;
}
