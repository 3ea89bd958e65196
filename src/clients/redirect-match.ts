/**
 * A loopback IP literal over plain http, its port apart: `http://127.0.0.1:40415/cb` is host
 * `127.0.0.1`, rest `/cb`. An empty path is `/` (RFC 3986 §6.2.3), so `http://127.0.0.1:40415`
 * matches a registered `http://127.0.0.1/`, as git-credential-oauth sends it.
 */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?].*)?$/s;

function loopbackParts(uri: string): { host: string; port: number | undefined; rest: string } | undefined {
  const m = LOOPBACK.exec(uri);
  if (!m) return undefined;
  const rest = m[3] ?? '/';
  return { host: m[1]!, port: m[2] === undefined ? undefined : Number(m[2]), rest: rest.startsWith('?') ? `/${rest}` : rest };
}

/**
 * Whether a requested redirect URI is one the client registered (docs/decisions.md): character for character,
 * with one exception, RFC 8252 §7.3: a native app listens on whatever port the system gives it, so a
 * registered `http://127.0.0.1[/path]` or `http://[::1][/path]` matches the same URI with any port.
 * Only those IP literals over plain http: `localhost` (which DNS or a hosts file may send elsewhere),
 * https and every other host match exactly; the path and query always do.
 */
export function redirectUriMatches(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  const asked = loopbackParts(requested);
  if (!asked || (asked.port !== undefined && (asked.port < 1 || asked.port > 65535))) return false;
  return registered.some((uri) => {
    const r = loopbackParts(uri);
    // A registration that names a port asked for that port: it matches exactly (above), not any port.
    return r !== undefined && r.port === undefined && r.host === asked.host && r.rest === asked.rest;
  });
}

/**
 * Whether the token request's `redirect_uri` is the authorize request's (RFC 6749 §4.1.3): identical,
 * or, for a loopback URI, the same URL with an empty path written as `/`. openid-client hands the
 * token endpoint the URL its listener was called at, `http://127.0.0.1:40415/`, for an authorize
 * request that said `http://127.0.0.1:40415`; the port must be the same.
 */
export function sameRedirectUri(authorized: string, presented: string): boolean {
  if (authorized === presented) return true;
  const a = loopbackParts(authorized);
  const b = loopbackParts(presented);
  return a !== undefined && b !== undefined && a.host === b.host && a.port === b.port && a.rest === b.rest;
}
