/** RFC 7636 and friends: random single-use values and the S256 code challenge, with Web Crypto. */
const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

/** 256 random bits, base64url: a code verifier, a state or a nonce. */
export const randomValue = (): string => base64url(crypto.getRandomValues(new Uint8Array(32)));

export async function s256(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
}

/** The claims of a JWT, unverified: the id_token came straight from the token endpoint over this origin's connection (OIDC Core 3.1.3.7). */
export function jwtClaims(jwt: string): Record<string, unknown> {
  const part = jwt.split('.')[1];
  if (!part) throw new Error('not a JWT');
  const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0)))) as Record<string, unknown>;
}
