import type { Request } from 'express';
import type { AppContext } from '../../context.ts';
import { provedRecently } from '../../login/sessions.ts';
import { withMfa } from '../../mfa/service.ts';
import type { User } from '../../users/model.ts';
import { checkCsrfToken } from '../csrf.ts';
import type { SignedIn } from '../current-session.ts';
import { expiredForm } from '../refusals.ts';
import { askForCode, type Flow, type PageStep, type Step } from './step.ts';

/**
 * The policy of docs/multi-factor-sign-in.md on a signed-in browser: a client that needs a second factor (or `mfa.required`)
 * and a session that has not used one. A user with a factor is asked for it (the session is raised,
 * not replaced); a user without one enrols TOTP, which needs a proof within five minutes (docs/decisions.md,
 * "Adding a factor"): an older session signs in again first.
 */
export function enrolmentSteps(ctx: AppContext) {
  async function askToEnrol(user: User, status = 200, error?: string): Promise<PageStep> {
    const enrolment = (await ctx.mfa.pendingTotp(user)) ?? (await ctx.mfa.startTotp(user));
    if (!enrolment) return askForCode(ctx, user); // enrolled meanwhile (another tab)
    return { show: 'enrol', status, enrolment, error };
  }

  return {
    /** The step the policy asks for, or `undefined` when the session is good as it is. */
    async demand(flow: Flow, signedIn: SignedIn): Promise<Step | undefined> {
      if (!flow.needsMfa || signedIn.session.amr.includes('mfa')) return undefined;
      if (flow.prompt.has('none')) return { show: 'refused', error: 'login_required', description: 'this application needs a second factor' };
      if (await ctx.mfa.hasFactor(signedIn.user.id)) return askForCode(ctx, signedIn.user);
      if (!provedRecently(signedIn.session)) return { show: 'login', status: 200, error: 'Sign in again to set up a second factor.', username: signedIn.user.username };
      return askToEnrol(signedIn.user);
    },

    /** Whether the enrolment form may be answered: only on a session proved within five minutes. */
    mayEnrol: (signedIn: SignedIn | undefined): signedIn is SignedIn => !!signedIn && provedRecently(signedIn.session),

    /**
     * The enrolment's answer: a right first code turns TOTP on, raises the session, ends the user's
     * other sessions (docs/decisions.md), and shows the recovery codes once.
     */
    async enrol(req: Request, form: Record<string, string>, signedIn: SignedIn): Promise<PageStep> {
      const { user, session } = signedIn;
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return askToEnrol(user, 403, expiredForm.other);
      const codes = await ctx.mfa.confirmTotp(user, form.code ?? '', { ip: req.ip, requestId: req.id, keep: session.id });
      if (!codes) return askToEnrol(user, 400, 'That code is not right: check the time on your phone and try the current one.');
      await ctx.sessions.setAmr(session.id, withMfa([...session.amr, 'otp']));
      return { show: 'recovery_codes', codes };
    },
  };
}
