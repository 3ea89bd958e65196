import type { Request } from 'express';
import type { AppContext } from '../context.ts';
import type { User } from '../users/model.ts';
import { readCookie, SSO_COOKIE } from './cookies.ts';
import type { SsoSession } from '../login/model.ts';

export interface SignedIn {
  session: SsoSession;
  user: User;
}

/** The browser's SSO session and its user, if both exist and the user is not disabled. */
export async function currentSession(ctx: AppContext, req: Request): Promise<SignedIn | undefined> {
  const session = await ctx.sessions.find(readCookie(req, SSO_COOKIE));
  if (!session) return undefined;
  const user = await ctx.users.find(session.userId);
  return user && !user.disabled ? { session, user } : undefined;
}
