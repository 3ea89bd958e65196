import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { seal, unseal } from '../../crypto/sealed.ts';
import { cookieOptions, readCookie, secureCookies } from '../cookies.ts';

/** This browser's sign-in that has just happened, for the request it continues. */
export const FRESH_COOKIE = 'lk_fresh';
const PURPOSE = 'fresh-sign-in';
const TTL_MS = 10 * 60 * 1000;

/**
 * A sign-in that has just happened counts as fresh for the rest of the request it was for: the expiry
 * notice's and the recovery codes' "Continue", the original request after an upstream's callback,
 * the consent and second-factor forms after it. Each of them still says `prompt=login`, `max_age` or
 * ForceAuthn, and without this would ask for the sign-in it has just had, and again after that.
 * A cookie (set with the step that follows the sign-in) rather than a form field, so every flow and
 * every page carries it without knowing; bound to the session it started and to the flow's client,
 * short-lived, and cleared when the request finishes.
 */
export function freshSignIns(ctx: AppContext) {
  const secure = secureCookies(ctx.config);
  return {
    mark(res: Response, sessionId: string, clientId: string): void {
      res.cookie(FRESH_COOKIE, seal(ctx.csrfKey, PURPOSE, { sid: sessionId, client: clientId }, TTL_MS), cookieOptions(secure, TTL_MS));
    },

    /** Whether this browser has just signed in to this session, for this client. */
    holds(req: Request, sessionId: string, clientId: string): boolean {
      const marker = unseal<{ sid: string; client: string }>(ctx.csrfKey, PURPOSE, readCookie(req, FRESH_COOKIE));
      return !!marker && marker.sid === sessionId && marker.client === clientId;
    },

    clear(req: Request, res: Response): void {
      if (readCookie(req, FRESH_COOKIE)) res.clearCookie(FRESH_COOKIE, cookieOptions(secure));
    },
  };
}

export type FreshSignIns = ReturnType<typeof freshSignIns>;
