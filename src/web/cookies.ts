import { parse } from 'cookie';
import type { CookieOptions, Request } from 'express';

export const SSO_COOKIE = 'lk_sso';

export const cookieOptions = (secure: boolean, maxAgeMs?: number): CookieOptions => ({
  httpOnly: true,
  sameSite: 'lax',
  secure,
  path: '/',
  ...(maxAgeMs ? { maxAge: maxAgeMs } : {}),
});

/** Reads one cookie; only the HTML routes call this, so the API paths parse no cookies at all. */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  return header ? parse(header)[name] : undefined;
}

/** Cookies are `Secure` when the server is reached over HTTPS. */
export const secureCookies = (config: { publicUrl: string }): boolean => config.publicUrl.startsWith('https:');
