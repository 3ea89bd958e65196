import { createHash, randomUUID } from 'node:crypto';
import { compactVerify, createLocalJWKSet, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import type { Db } from '../db/connect.ts';
import { num } from '../db/rows.ts';
import { decrypt, encrypt } from '../crypto/secrets.ts';

interface LoadedKey {
  kid: string;
  alg: string;
  publicJwk: JWK;
  privateKey: CryptoKey;
  createdAt: number;
}

/**
 * The id_token signing keys. Generated on first start and stored with the private half encrypted
 * (AES-GCM under a key derived from LATCHKEY_SECRET). Every process signs with the oldest active key,
 * so processes that started together agree on one, and all active keys are published in the JWKS.
 */
export async function loadSigningKeys(db: Db, encryptionKey: Buffer) {
  async function readAll(): Promise<LoadedKey[]> {
    const rows = await db('signing_keys').whereNull('retired_at').orderBy([{ column: 'created_at' }, { column: 'kid' }]);
    return Promise.all(
      rows.map(async (r) => {
        const privateJwk = JSON.parse(decrypt(encryptionKey, String(r.private_jwk_enc))) as JWK;
        return {
          kid: String(r.kid),
          alg: String(r.alg),
          publicJwk: JSON.parse(String(r.public_jwk)) as JWK,
          privateKey: (await importJWK(privateJwk, String(r.alg))) as CryptoKey,
          createdAt: num(r.created_at),
        };
      }),
    );
  }

  let keys: LoadedKey[];
  try {
    keys = await readAll();
  } catch (err) {
    throw new Error(`cannot decrypt the stored signing keys: is LATCHKEY_SECRET the one they were made with? (${(err as Error).message})`);
  }
  if (keys.length === 0) {
    const alg = 'RS256';
    const { publicKey, privateKey } = await generateKeyPair(alg, { modulusLength: 2048, extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
    await db('signing_keys').insert({
      kid,
      alg,
      public_jwk: JSON.stringify(publicJwk),
      private_jwk_enc: encrypt(encryptionKey, JSON.stringify(await exportJWK(privateKey))),
      created_at: Date.now(),
    });
    keys = await readAll();
  }
  const active = keys[0]!;
  const jwks = { keys: keys.map((k) => k.publicJwk) };
  const localSet = createLocalJWKSet(jwks);

  return {
    jwks,
    alg: active.alg,
    sign(payload: JWTPayload): Promise<string> {
      return new SignJWT(payload).setProtectedHeader({ alg: active.alg, kid: active.kid, typ: 'JWT' }).sign(active.privateKey);
    },
    /** Checks a token this server signed, expired or not (an id_token_hint may be old). */
    async verifyOwn(jwt: string): Promise<JWTPayload | undefined> {
      try {
        const { payload } = await compactVerify(jwt, localSet);
        return JSON.parse(new TextDecoder().decode(payload)) as JWTPayload;
      } catch {
        return undefined;
      }
    },
  };
}

export type SigningKeys = Awaited<ReturnType<typeof loadSigningKeys>>;

/** OIDC's at_hash: the left half of the SHA-256 of the access token, base64url. */
export const atHash = (accessToken: string): string =>
  createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url');
