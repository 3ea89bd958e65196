/**
 * A signing key as stored (its private part sealed).
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

/** A stored key: its private half still sealed under LATCHKEY_SECRET. */
export interface StoredKey {
  kid: string;
  alg: string;
  publicJwk: string;
  privateJwkEnc: string;
  createdAt: number;
  activatesAt: number;
  retiredAt: number | null;
}
