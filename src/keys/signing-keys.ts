import { createHash, randomUUID } from 'node:crypto';
import { compactVerify, createLocalJWKSet, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import type { Db } from '../db/connect.ts';
import { num } from '../db/rows.ts';
import { decrypt, encrypt } from '../crypto/secrets.ts';

export const SIGNING_ALGS = ['RS256', 'ES256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

export interface KeyPolicy {
  /** A new key is published this long before it signs, so every process and cache has it first. */
  publishDelayMs: number;
  /** A retired key stays published this long: the longest lifetime of anything it signed. */
  keepRetiredMs: number;
}

export interface SigningKeyInfo {
  kid: string;
  alg: SigningAlg;
  createdAt: number;
  activatesAt: number;
  retiredAt: number | null;
}

/** A key as the admin API shows it: `signing` marks the one of its algorithm that signs now. */
export type PublishedKey = SigningKeyInfo & { signing: boolean };

interface LoadedKey extends SigningKeyInfo {
  publicJwk: JWK;
  privateKey: CryptoKey;
}

const generate = (alg: SigningAlg) =>
  generateKeyPair(alg, alg === 'RS256' ? { modulusLength: 2048, extractable: true } : { extractable: true });

/**
 * The signing keys, one line per algorithm (RS256 for every client by default, ES256 for clients that
 * ask for it). Private halves are stored AES-GCM-encrypted under a key derived from LATCHKEY_SECRET.
 *
 * Rotation without downtime: a new key is written with `activates_at` in the future and published at
 * once; when that time comes it signs, and the key it replaces is retired at the same instant but stays
 * in the JWKS for `keepRetiredMs`, so tokens it signed still verify. Every process re-reads the table
 * periodically (`reload`), so all of them publish a key before any of them signs with it.
 */
export async function loadSigningKeys(db: Db, encryptionKey: Buffer, policy: KeyPolicy) {
  const imported = new Map<string, LoadedKey>();
  let keys: LoadedKey[] = [];
  let jwks: { keys: JWK[] } = { keys: [] };
  let localSet = createLocalJWKSet(jwks);

  async function load(row: Record<string, unknown>): Promise<LoadedKey> {
    const kid = String(row.kid);
    const retiredAt = row.retired_at == null ? null : num(row.retired_at);
    const cached = imported.get(kid);
    if (cached) return { ...cached, retiredAt };
    const alg = String(row.alg) as SigningAlg;
    const privateJwk = JSON.parse(decrypt(encryptionKey, String(row.private_jwk_enc))) as JWK;
    const key: LoadedKey = {
      kid,
      alg,
      publicJwk: JSON.parse(String(row.public_jwk)) as JWK,
      privateKey: (await importJWK(privateJwk, alg)) as CryptoKey,
      createdAt: num(row.created_at),
      activatesAt: num(row.activates_at ?? row.created_at),
      retiredAt,
    };
    imported.set(kid, key);
    return key;
  }

  async function reload(): Promise<void> {
    const rows = await db('signing_keys')
      .where((q) => q.whereNull('retired_at').orWhere('retired_at', '>', Date.now() - policy.keepRetiredMs))
      .orderBy([{ column: 'activates_at' }, { column: 'kid' }]);
    keys = await Promise.all(rows.map(load));
    jwks = { keys: keys.map((k) => k.publicJwk) };
    localSet = createLocalJWKSet(jwks);
  }

  async function insert(alg: SigningAlg, activatesAt: number): Promise<string> {
    const { publicKey, privateKey } = await generate(alg);
    const kid = randomUUID();
    await db('signing_keys').insert({
      kid,
      alg,
      public_jwk: JSON.stringify({ ...(await exportJWK(publicKey)), kid, alg, use: 'sig' }),
      private_jwk_enc: encrypt(encryptionKey, JSON.stringify(await exportJWK(privateKey))),
      created_at: Date.now(),
      activates_at: activatesAt,
    });
    return kid;
  }

  /** The key that signs for `alg` now: the newest whose time has come and which is not retired. */
  function signer(alg: SigningAlg, now = Date.now()): LoadedKey {
    const usable = keys.filter((k) => k.alg === alg && k.activatesAt <= now && (k.retiredAt === null || k.retiredAt > now));
    const key = usable.at(-1) ?? keys.find((k) => k.alg === alg && k.retiredAt === null);
    if (!key) throw new Error(`no ${alg} signing key`);
    return key;
  }

  try {
    await reload();
  } catch (err) {
    throw new Error(`cannot decrypt the stored signing keys: is LATCHKEY_SECRET the one they were made with? (${(err as Error).message})`);
  }
  // First start (or a new algorithm): a key for every algorithm, usable at once.
  const missing = SIGNING_ALGS.filter((alg) => !keys.some((k) => k.alg === alg && k.retiredAt === null));
  for (const alg of missing) await insert(alg, Date.now());
  if (missing.length > 0) await reload();

  return {
    get jwks() {
      return jwks;
    },
    algs: SIGNING_ALGS,
    reload,

    sign(payload: JWTPayload, alg: SigningAlg = 'RS256', typ = 'JWT'): Promise<string> {
      const key = signer(alg);
      return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ }).sign(key.privateKey);
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

    /** The published keys, for the admin API. */
    list(now = Date.now()): PublishedKey[] {
      const signing = new Set(SIGNING_ALGS.map((alg) => signer(alg, now).kid));
      return keys.map(({ kid, alg, createdAt, activatesAt, retiredAt }) => ({ kid, alg, createdAt, activatesAt, retiredAt, signing: signing.has(kid) }));
    },

    /**
     * Starts a rotation for each algorithm given: the new key is published now and signs from
     * `now + publishDelayMs`, when the key it replaces is retired. Returns the new keys.
     */
    async rotate(algs: readonly SigningAlg[] = SIGNING_ALGS, now = Date.now()): Promise<PublishedKey[]> {
      const activatesAt = now + policy.publishDelayMs;
      const kids: string[] = [];
      for (const alg of algs) {
        const kid = await insert(alg, activatesAt);
        await db('signing_keys').where({ alg }).whereNot({ kid }).whereNull('retired_at').update({ retired_at: activatesAt });
        kids.push(kid);
      }
      await reload();
      return this.list(now).filter((k) => kids.includes(k.kid));
    },

    /** Rotates each algorithm whose newest key is older than `maxAgeMs`; forgets keys past their keep time. */
    async rotateIfDue(maxAgeMs: number, now = Date.now()): Promise<PublishedKey[]> {
      await db('signing_keys').where('retired_at', '<', now - policy.keepRetiredMs).delete();
      await reload();
      const due = SIGNING_ALGS.filter((alg) => {
        const newest = keys.filter((k) => k.alg === alg).at(-1);
        return !newest || now - newest.createdAt > maxAgeMs;
      });
      return due.length > 0 ? this.rotate(due, now) : [];
    },
  };
}

export type SigningKeys = Awaited<ReturnType<typeof loadSigningKeys>>;

/** OIDC's at_hash: the left half of the SHA-256 of the access token, base64url (for RS256 and ES256). */
export const atHash = (accessToken: string): string =>
  createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url');
