import type { Response } from 'express';
import type { AppContext } from '../context.ts';
import type { Amr } from '../login/model.ts';
import { DEVICE_COOKIE, deviceCookieOptions } from '../throttle/device-cookie.ts';
import type { User } from '../users/model.ts';
import { cookieOptions, secureCookies, SSO_COOKIE } from './cookies.ts';
import type { SignedIn } from './current-session.ts';

/**
 * A finished sign-in: a new SSO session in its cookie, and the device cookie that keeps this browser
 * counted on its own by the brute-force policy (docs/decisions.md); a sign-in at an upstream (docs/upstream-identity-providers.md) typed no
 * password here and has none.
 */
export async function startSession(ctx: AppContext, res: Response, user: User, amr: Amr[], deviceCookie?: string): Promise<SignedIn> {
  const { cookie, session } = await ctx.sessions.create(user.id, amr);
  res.cookie(SSO_COOKIE, cookie, cookieOptions(secureCookies(ctx.config)));
  // Undefined after a sign-in finished by the change-password step or an upstream: the browser keeps the cookie it has.
  if (deviceCookie) res.cookie(DEVICE_COOKIE, deviceCookie, deviceCookieOptions(secureCookies(ctx.config)));
  return { session, user };
}

/** A factor used on a session that had less (step-up): the same session, carrying the factor from now on. */
export async function raiseSession(
  ctx: AppContext,
  res: Response,
  signedIn: SignedIn,
  amr: Amr[],
  deviceCookie?: string,
): Promise<SignedIn> {
  await ctx.sessions.setAmr(signedIn.session.id, amr);
  if (deviceCookie) res.cookie(DEVICE_COOKIE, deviceCookie, deviceCookieOptions(secureCookies(ctx.config)));
  return { ...signedIn, session: { ...signedIn.session, amr } };
}
