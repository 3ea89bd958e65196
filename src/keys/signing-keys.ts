import { createHash, randomUUID } from 'node:crypto';
import { compactVerify, createLocalJWKSet, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import { decrypt, encrypt } from '../crypto/secrets.ts';
import { SYSTEM_ACTOR, type Actor, type AuditLog } from '../audit/record.ts';
import type { Transaction } from '../db/transaction.ts';
import type { KeyQueries } from './key-queries.ts';
import type { StoredKey } from './model.ts';
import { clock } from '../clock.ts';

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

/** A key as loaded: its public JWK and its private half, usable for signing (SAML signs with it too). */
export interface LoadedKey extends SigningKeyInfo {
  publicJwk: JWK;
  privateKey: CryptoKey;
}

const generate = (alg: SigningAlg) =>
  generateKeyPair(alg, alg === 'RS256' ? { modulusLength: 2048, extractable: true } : { extractable: true });

/** Key pairs being made, by algorithm; see `beginFirstKeys`. */
export type PendingKeyPairs = Partial<Record<SigningAlg, ReturnType<typeof generate>>>;

/**
 * Starts making a key pair for every algorithm on the pool threads. A fresh deployment calls it before
 * its migrations, so that the first RSA key (about a fifth of a second) is made while they run rather
 * than after them. A failure surfaces where the pair is used, not as an unhandled rejection.
 */
export function beginFirstKeys(): PendingKeyPairs {
  const pending: PendingKeyPairs = {};
  for (const alg of SIGNING_ALGS) {
    pending[alg] = generate(alg);
    pending[alg].catch(() => undefined);
  }
  return pending;
}

/**
 * The signing keys, one line per algorithm (RS256 for every client by default, ES256 for clients that
 * ask for it). Private halves are stored AES-GCM-encrypted under a key derived from LATCHKEY_SECRET.
 *
 * Rotation without downtime: a new key is written with `activates_at` in the future and published at
 * once; when that time comes it signs, and the key it replaces is retired at the same instant but stays
 * in the JWKS for `keepRetiredMs`, so tokens it signed still verify. Every process re-reads the table
 * periodically (`reload`), so all of them publish a key before any of them signs with it.
 */
/** What a rotation needs of a transaction: the new keys, the retirements and the audit event commit together. */
export type KeyTransaction = Transaction<{
  queries: { keys: Pick<KeyQueries, 'insert' | 'retireOthers'> };
  audit: Pick<AuditLog, 'change'>;
}>;

export async function loadSigningKeys(
  queries: KeyQueries,
  encryptionKey: Buffer,
  policy: KeyPolicy,
  transaction: KeyTransaction,
  firstKeys: PendingKeyPairs = {},
) {
  const imported = new Map<string, LoadedKey>();
  let keys: LoadedKey[] = [];
  let jwks: { keys: JWK[] } = { keys: [] };
  let localSet = createLocalJWKSet(jwks);

  async function load(row: StoredKey): Promise<LoadedKey> {
    const cached = imported.get(row.kid);
    if (cached) return { ...cached, retiredAt: row.retiredAt };
    const alg = row.alg as SigningAlg;
    const privateJwk = JSON.parse(decrypt(encryptionKey, row.privateJwkEnc)) as JWK;
    const key: LoadedKey = {
      kid: row.kid,
      alg,
      publicJwk: JSON.parse(row.publicJwk) as JWK,
      privateKey: (await importJWK(privateJwk, alg)) as CryptoKey,
      createdAt: row.createdAt,
      activatesAt: row.activatesAt,
      retiredAt: row.retiredAt,
    };
    imported.set(row.kid, key);
    return key;
  }

  async function reload(): Promise<void> {
    keys = await Promise.all((await queries.published(clock.now() - policy.keepRetiredMs)).map(load));
    jwks = { keys: keys.map((k) => k.publicJwk) };
    localSet = createLocalJWKSet(jwks);
  }

  /** A new key, as stored; generated before any transaction starts (an RSA key takes a while). */
  async function newKey(alg: SigningAlg, activatesAt: number): Promise<Omit<StoredKey, 'retiredAt'>> {
    const pending = firstKeys[alg];
    delete firstKeys[alg]; // a pair is used once, by the first key of its algorithm
    const { publicKey, privateKey } = await (pending ?? generate(alg));
    const kid = randomUUID();
    return {
      kid,
      alg,
      publicJwk: JSON.stringify({ ...(await exportJWK(publicKey)), kid, alg, use: 'sig' }),
      privateJwkEnc: encrypt(encryptionKey, JSON.stringify(await exportJWK(privateKey))),
      createdAt: clock.now(),
      activatesAt,
    };
  }

  /** The key that signs for `alg` now: the newest whose time has come and which is not retired. */
  function signer(alg: SigningAlg, now = clock.now()): LoadedKey {
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
  for (const alg of missing) await queries.insert(await newKey(alg, clock.now()));
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

    /**
     * Checks an id_token this server signed, expired or not (an id_token_hint may be old). A JWT access
     * token (`typ: at+jwt`) or a logout token (`logout+jwt`) is not an id_token and is refused.
     */
    async verifyOwnIdToken(jwt: string): Promise<JWTPayload | undefined> {
      try {
        const { payload, protectedHeader } = await compactVerify(jwt, localSet);
        if (protectedHeader.typ === 'at+jwt' || protectedHeader.typ === 'logout+jwt') return undefined;
        return JSON.parse(new TextDecoder().decode(payload)) as JWTPayload;
      } catch {
        return undefined;
      }
    },

    /**
     * The RSA keys for SAML (docs/saml-applications.md): the one that signs now, and every RS256 key published and not
     * retired (a key waiting to sign is in the IdP metadata before it signs, as in the JWKS).
     */
    rsa(now = clock.now()): { signing: LoadedKey; published: LoadedKey[] } {
      const signing = signer('RS256', now);
      const published = keys.filter((k) => k.alg === 'RS256' && (k.retiredAt === null || k.retiredAt > now));
      return { signing, published: [signing, ...published.filter((k) => k.kid !== signing.kid)] };
    },

    /** The published keys, for the admin API. */
    list(now = clock.now()): PublishedKey[] {
      const signing = new Set(SIGNING_ALGS.map((alg) => signer(alg, now).kid));
      return keys.map(({ kid, alg, createdAt, activatesAt, retiredAt }) => ({
        kid,
        alg,
        createdAt,
        activatesAt,
        retiredAt,
        signing: signing.has(kid),
      }));
    },

    /**
     * Starts a rotation for each algorithm given: the new key is published now and signs from
     * `now + publishDelayMs`, when the key it replaces is retired. Returns the new keys.
     */
    async rotate(algs: readonly SigningAlg[] = SIGNING_ALGS, actor: Actor = SYSTEM_ACTOR, now = clock.now()): Promise<PublishedKey[]> {
      const activatesAt = now + policy.publishDelayMs;
      const made = await Promise.all(algs.map((alg) => newKey(alg, activatesAt)));
      const kids = made.map((k) => k.kid);
      await transaction(async (tx) => {
        for (const key of made) {
          await tx.queries.keys.insert(key);
          await tx.queries.keys.retireOthers(key.alg, key.kid, activatesAt);
        }
        await tx.audit.change('keys.rotate', actor, {}, { kids });
      });
      await reload();
      return this.list(now).filter((k) => kids.includes(k.kid));
    },

    /** Rotates each algorithm whose newest key is older than `maxAgeMs`; forgets keys past their keep time. */
    async rotateIfDue(maxAgeMs: number, now = clock.now()): Promise<PublishedKey[]> {
      await queries.deleteRetiredBefore(now - policy.keepRetiredMs);
      await reload();
      const due = SIGNING_ALGS.filter((alg) => {
        const newest = keys.filter((k) => k.alg === alg).at(-1);
        return !newest || now - newest.createdAt > maxAgeMs;
      });
      return due.length > 0 ? this.rotate(due, SYSTEM_ACTOR, now) : [];
    },
  };
}

export type SigningKeys = Awaited<ReturnType<typeof loadSigningKeys>>;

/** OIDC's at_hash: the left half of the SHA-256 of the access token, base64url (for RS256 and ES256). */
export const atHash = (accessToken: string): string =>
  createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url');
