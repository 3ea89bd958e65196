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
