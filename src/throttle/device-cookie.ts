import { randomBytes } from 'node:crypto';
import { hmac } from '../crypto/secrets.ts';
import { safeEqual } from '../crypto/tokens.ts';

export const DEVICE_COOKIE = 'lk_device';

/** How long a browser stays known after a successful sign-in. */
export const DEVICE_COOKIE_MAX_AGE_MS = 180 * 24 * 3600 * 1000;

/** The cookie's attributes, in the shape express's `res.cookie` takes (the throttle knows no HTTP). */
export interface DeviceCookieOptions {
  httpOnly: boolean;
  sameSite: 'lax';
  secure: boolean;
  path: string;
  maxAge: number;
}

export const deviceCookieOptions = (secure: boolean): DeviceCookieOptions => ({
  httpOnly: true,
  sameSite: 'lax',
  secure,
  path: '/',
  maxAge: DEVICE_COOKIE_MAX_AGE_MS,
});

/**
 * OWASP's device cookie: set after a successful sign-in, it names the account (by its throttle key,
 * never the name) and a random device id, signed with a key derived from LATCHKEY_SECRET. A browser
 * that holds one for the account it signs in to is counted on its own, so failures from elsewhere
 * cannot lock the real user out of their own browser.
 */
export function issueDeviceCookie(key: Buffer, account: string): string {
  const device = randomBytes(16).toString('base64url');
  return `${account}.${device}.${hmac(key, `${account}.${device}`)}`;
}

/** The device id, when the cookie is genuine and was issued for this account. */
export function deviceFor(key: Buffer, cookie: string | undefined, account: string): string | undefined {
  if (!cookie) return undefined;
  const [owner, device, mac] = cookie.split('.');
  if (!owner || !device || !mac || owner !== account) return undefined;
  return safeEqual(hmac(key, `${owner}.${device}`), mac) ? device : undefined;
}
