import { timingSafeEqual } from 'node:crypto';
import { clock } from '../clock.ts';
import { hmac } from './secrets.ts';

/**
 * A small signed value a form or a page carries instead of server-side state (a sign-in waiting for
 * its second step, a WebAuthn challenge): JSON, base64url, an HMAC bound to its purpose, and an
 * expiry. Signed, not encrypted: it holds nothing secret.
 */
export function seal(key: Buffer, purpose: string, payload: Record<string, unknown>, ttlMs: number): string {
  const body = Buffer.from(JSON.stringify({ ...payload, exp: clock.now() + ttlMs })).toString('base64url');
  return `${body}.${hmac(key, `${purpose}.${body}`)}`;
}

export function unseal<T>(key: Buffer, purpose: string, sealed: string | undefined): T | undefined {
  const [body, mac] = (sealed ?? '').split('.');
  if (!body || !mac) return undefined;
  const expected = Buffer.from(hmac(key, `${purpose}.${body}`));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as T & { exp: number };
    return value.exp > clock.now() ? value : undefined;
  } catch {
    return undefined;
  }
}
