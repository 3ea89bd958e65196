import type { Request } from 'express';
import type { AppContext } from '../../context.ts';
import { provedRecently } from '../../login/sessions.ts';
import { withMfa } from '../../mfa/service.ts';
import type { User } from '../../users/model.ts';
import { checkCsrfToken } from '../csrf.ts';
import type { SignedIn } from '../current-session.ts';
import { expiredForm } from '../refusals.ts';
import type { SecondFactorStep } from './next-step.ts';
import { askForCode, type PageStep } from './step.ts';

/**
 * The pages of docs/multi-factor-sign-in.md's policy on a signed-in browser, whose rules are next-step.ts's: a client that needs
 * a second factor (or `mfa.required`) and a session that has not used one. A user with a factor is asked for it (the session is
 * raised, not replaced); a user without one enrols TOTP, which needs a proof within five minutes (docs/decisions.md,
 * "Adding a factor"): an older session signs in again first.
 */
export function enrolmentSteps(ctx: AppContext) {
  async function askToEnrol(user: User, status = 200, error?: string): Promise<PageStep> {
    const enrolment = (await ctx.mfa.pendingTotp(user)) ?? (await ctx.mfa.startTotp(user));
    if (!enrolment) return askForCode(ctx, user); // enrolled meanwhile (another tab)
    return { show: 'enrol', status, enrolment, error };
  }

  return {
    /** The page of the second-factor step the rules chose (next-step.ts): the code, signing in again first, or enrolment. */
    async step(kind: SecondFactorStep, user: User): Promise<PageStep> {
      if (kind === 'second_factor') return askForCode(ctx, user);
      if (kind === 'sign_in_again')
        return { show: 'login', status: 200, error: 'Sign in again to set up a second factor.', username: user.username };
      return askToEnrol(user);
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
