import { hash, randomFillSync, timingSafeEqual } from 'node:crypto';
import { v7 } from 'uuid';

/**
 * Random bytes are drawn from the system in 4 KiB refills and each byte handed out once: one call
 * into OpenSSL per 128 tokens instead of one per token, on paths that mint two or three per request.
 * A refill is a new buffer, never one a token was read from.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

/** `bytes` fresh random bytes, a view of the pool that no other caller is handed. */
function pooled(bytes: number): Buffer {
  if (offset + bytes > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(Math.max(POOL_BYTES, bytes)));
    offset = 0;
  }
  offset += bytes;
  return pool.subarray(offset - bytes, offset);
}

/** A fresh 256-bit random value, base64url: codes, tokens, session ids, client secrets. */
export const randomToken = (bytes = 32): string => pooled(bytes).toString('base64url');

/**
 * A time-ordered UUID (v7: the time in milliseconds, then random bits) for an internal key that an
 * index is searched by: new keys land at the index's end, where concurrent inserts share a page.
 * Never for a secret. Its random bits come from the pool (uuid's own draw asks OpenSSL each time).
 */
export const timeOrderedId = (): string => v7({ random: pooled(16) });

/**
 * What is stored for a high-entropy secret. SHA-256 suffices for 256-bit random values (nothing to
 * brute-force) and keeps the lookup a primary-key read; passwords use argon2id instead.
 */
export const hashToken = (value: string): string => hash('sha256', value, 'base64url');

/** Constant-time equality for strings of any length. */
export function safeEqual(a: string, b: string): boolean {
  const ha = hash('sha256', a, 'buffer');
  const hb = hash('sha256', b, 'buffer');
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/**
 * The `sid` an SSO session is known by to the clients (id_tokens, logout tokens): stable for the
 * session, derived from its stored id hash but not that hash itself, which is the session's key in
 * the database and must not travel.
 */
export const sessionSid = (sessionIdHash: string): string => hash('sha256', `sid:${sessionIdHash}`, 'base64url');
