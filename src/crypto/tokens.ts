import { hash, randomFillSync, timingSafeEqual } from 'node:crypto';

/**
 * Random bytes are drawn from the system in 4 KiB refills and each byte handed out once: one call
 * into OpenSSL per 128 tokens instead of one per token, on paths that mint two or three per request.
 * A refill is a new buffer, never one a token was read from.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

/** A fresh 256-bit random value, base64url: codes, tokens, session ids, client secrets. */
export function randomToken(bytes = 32): string {
  if (offset + bytes > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(Math.max(POOL_BYTES, bytes)));
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + bytes);
  offset += bytes;
  return token;
}

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
