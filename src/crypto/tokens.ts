import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A fresh 256-bit random value, base64url: codes, tokens, session ids, client secrets. */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/**
 * What is stored for a high-entropy secret. SHA-256 suffices for 256-bit random values (nothing to
 * brute-force) and keeps the lookup a primary-key read; passwords use argon2id instead.
 */
export const hashToken = (value: string): string => createHash('sha256').update(value).digest('base64url');

/** Constant-time equality for strings of any length. */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
