import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { InputError } from '../errors/service.ts';
import type { AuthMethod, Client } from './model.ts';

/** Algorithms a `private_key_jwt` assertion may be signed with (docs/connect-an-application.md); `client_secret_jwt`: HS256. */
export const ASSERTION_ALGS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;

/** The method a client must use; null (registered before the field) means Basic or post. */
export function methodsOf(client: Client): AuthMethod[] {
  if (client.tokenEndpointAuthMethod) return [client.tokenEndpointAuthMethod];
  return client.confidential ? ['client_secret_basic', 'client_secret_post'] : ['none'];
}

/** A JWKS of public keys of the kinds ASSERTION_ALGS need; the parsed set. */
export function checkJwks(text: string): JSONWebKeySet {
  let set: JSONWebKeySet;
  try {
    set = JSON.parse(text) as JSONWebKeySet;
    createLocalJWKSet(set);
  } catch {
    throw new InputError('jwks', 'must be a JSON Web Key Set ({"keys": [...]})');
  }
  if (text.length > 64_000 || set.keys.length === 0 || set.keys.length > 20)
    throw new InputError('jwks', 'must hold 1 to 20 keys, at most 64000 characters');
  for (const k of set.keys) {
    if (!['RSA', 'EC', 'OKP'].includes(String(k.kty)))
      throw new InputError('jwks', `key type ${String(k.kty)} cannot sign an assertion (RSA, EC or OKP)`);
    if ('d' in k) throw new InputError('jwks', 'holds a private key: register the public keys only');
    if (k.use !== undefined && k.use !== 'sig') throw new InputError('jwks', 'a key for use other than "sig"');
  }
  return set;
}

export function checkJwksUri(uri: string): void {
  let url: URL | undefined;
  try {
    url = new URL(uri);
  } catch {
    url = undefined;
  }
  if (!url || !['https:', 'http:'].includes(url.protocol) || uri.length > 2000 || url.hash) {
    throw new InputError('jwksUri', 'must be an https (or http) URL of at most 2000 characters, no fragment');
  }
}

/** The method and its key material agree with the client being confidential or public. */
export function checkAuthMethod(c: {
  confidential?: boolean;
  tokenEndpointAuthMethod?: AuthMethod | null;
  jwks?: string | null;
  jwksUri?: string | null;
}): void {
  const method = c.tokenEndpointAuthMethod;
  const confidential = c.confidential ?? true;
  if (c.jwks) checkJwks(c.jwks);
  if (c.jwksUri) checkJwksUri(c.jwksUri);
  if (method == null) return;
  if (method === 'none' && confidential)
    throw new InputError('tokenEndpointAuthMethod', 'a confidential client must authenticate: not none');
  if (method !== 'none' && !confidential) throw new InputError('tokenEndpointAuthMethod', 'a public client has no credentials: none');
  if (method === 'private_key_jwt' && !c.jwks === !c.jwksUri)
    throw new InputError('jwks', 'private_key_jwt needs exactly one of jwks and jwksUri');
}
