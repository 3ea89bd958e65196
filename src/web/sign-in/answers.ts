import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { checkCsrfToken } from '../csrf.ts';
import { secureCookies } from '../cookies.ts';
import type { SignedIn } from '../current-session.ts';
import type { SignInStrategies } from '../passport.ts';
import { pendingSignIns } from '../pending-sign-in.ts';
import { expiredForm, refusalOf } from '../refusals.ts';
import { raiseSession, startSession } from '../start-session.ts';
import { attemptOf } from '../attempt.ts';
import { askForCode, type Flow, type PageStep, type SignedInNow } from './step.ts';

type Form = Record<string, string>;

/**
 * The answers to the sign-in forms (SPEC 8), wherever they are shown: the password, the second step's
 * code, a passkey. A right password of a user with a factor gives a pending sign-in bound to this
 * browser, used once (pending-sign-in.ts); a wrong code gets a new one in what is left of its time.
 */
export function signInAnswers(ctx: AppContext, strategies: SignInStrategies) {
  const pending = pendingSignIns(ctx.csrfKey, secureCookies(ctx.config), ctx.sessions);
  // Expired, forged, or another browser's: the sign-in starts again (SPEC 7).
  const signInAgain: PageStep = { show: 'login', status: 403, error: expiredForm.signInAgain };

  async function password(req: Request, res: Response, form: Form, flow: Flow): Promise<PageStep | SignedInNow> {
    const username = (form.username ?? '').trim();
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { show: 'login', status: 403, error: expiredForm.signIn, username };
    const outcome = await strategies.authenticate('password', req, res, { clientId: flow.clientId });
    if (outcome.ok) return { signedIn: await startSession(ctx, res, outcome.user, outcome.amr, outcome.deviceCookie), fresh: true };
    if (outcome.reason === 'second_factor') {
      const started = await pending.begin(req, res, { userId: outcome.user.id, amr: ['pwd'], clientId: flow.clientId });
      return askForCode(ctx, outcome.user, { pending: started });
    }
    const refusal = refusalOf(outcome, 'password');
    if (outcome.reason === 'password_expired' || outcome.reason === 'password_must_change') {
      return { show: 'change_password', status: refusal.status, error: refusal.message, username };
    }
    return { show: 'login', status: refusal.status, error: refusal.message, username, retryAfter: refusal.retryAfter };
  }

  /** The second step's code: after a password (a pending sign-in in the form) or on a session that needs more. */
  async function code(req: Request, res: Response, form: Form, flow: Flow, current: SignedIn | undefined): Promise<PageStep | SignedInNow> {
    // The CSRF check comes first, so a forged post cannot use a pending sign-in up.
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return signInAgain;
    const taken = form.pending ? await pending.take(req, form.pending, flow.clientId) : undefined;
    if (form.pending && !taken) return signInAgain;
    const user = taken ? await ctx.users.find(taken.userId) : current?.user;
    if (!user || user.disabled) return signInAgain;
    const amr = taken?.amr ?? current!.session.amr;
    const outcome = await ctx.signIn.secondStep({ user, code: form.code ?? '', amr, ...attemptOf(req, flow.clientId) });
    if (!outcome.ok) return askForCode(ctx, user, { pending: await taken?.again(res), refusal: refusalOf(outcome, 'code') });
    if (taken) return { signedIn: await startSession(ctx, res, user, outcome.amr, outcome.deviceCookie), fresh: true };
    return { signedIn: await raiseSession(ctx, res, current!, outcome.amr, outcome.deviceCookie), fresh: false };
  }

  /** A passkey: alone from the login page (the credential names the user), after a password, or to raise a session. */
  async function passkey(req: Request, res: Response, form: Form, flow: Flow, current: SignedIn | undefined): Promise<PageStep | SignedInNow> {
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { show: 'login', status: 403, error: expiredForm.signIn };
    const taken = form.pending ? await pending.take(req, form.pending, flow.clientId) : undefined;
    if (form.pending && !taken) return signInAgain;
    const known = taken ? await ctx.users.find(taken.userId) : current?.user;
    const amr = taken?.amr ?? current?.session.amr ?? [];
    const outcome = await strategies.authenticate('passkey', req, res, { clientId: flow.clientId, user: known, amr });
    if (!outcome.ok) {
      const refusal = refusalOf(outcome, 'passkey');
      if (!known) return { show: 'login', status: refusal.status, error: refusal.message, retryAfter: refusal.retryAfter };
      return askForCode(ctx, known, { pending: await taken?.again(res), refusal });
    }
    if (taken || !current) return { signedIn: await startSession(ctx, res, outcome.user, outcome.amr, outcome.deviceCookie), fresh: true };
    return { signedIn: await raiseSession(ctx, res, current, outcome.amr), fresh: false };
  }

  return {
    /** The answer to a posted sign-in form (`_action` login, mfa or passkey); `undefined` for any other form. */
    answer(req: Request, res: Response, form: Form, flow: Flow, current: SignedIn | undefined): Promise<PageStep | SignedInNow> | undefined {
      if (form._action === 'login') return password(req, res, form, flow);
      if (form._action === 'mfa') return code(req, res, form, flow, current);
      if (form._action === 'passkey') return passkey(req, res, form, flow, current);
      return undefined;
    },
  };
}

export type SignInAnswers = ReturnType<typeof signInAnswers>;
