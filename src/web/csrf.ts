import type { Request, Response } from 'express';
import { hmac } from '../crypto/secrets.ts';
import { randomToken, safeEqual } from '../crypto/tokens.ts';
import { cookieOptions, readCookie } from './cookies.ts';

const CSRF_COOKIE = 'lk_csrf';

/**
 * Signed double-submit CSRF token: a random value in an HttpOnly cookie, and its HMAC in the form.
 * A cross-site page can neither read the cookie nor forge the HMAC.
 */
export function issueCsrfToken(req: Request, res: Response, key: Buffer, secure: boolean): string {
  let value = readCookie(req, CSRF_COOKIE);
  if (!value || value.length < 32) {
    value = randomToken();
    res.cookie(CSRF_COOKIE, value, cookieOptions(secure));
  }
  return hmac(key, value);
}

export function checkCsrfToken(req: Request, key: Buffer, submitted: string | undefined): boolean {
  const value = readCookie(req, CSRF_COOKIE);
  return !!value && !!submitted && safeEqual(hmac(key, value), submitted);
}
