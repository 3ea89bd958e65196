import type { Request } from 'express';
import { clock } from '../../clock.ts';
import type { AppContext } from '../../context.ts';
import type { User } from '../../users/model.ts';
import type { SignedIn } from '../current-session.ts';
import { refusalOf } from '../refusals.ts';
import { attemptOf } from '../attempt.ts';
import type { Flow } from '../sign-in/step.ts';

/** Sign-ins and proofs at the account page belong to no client application. */
export const NO_CLIENT = '';

/** A sign-in that belongs to no client (the account page, "My applications"): no consent, no client's second factor, no scopes. */
export const clientlessFlow = (resume: string): Flow => ({
  clientId: NO_CLIENT,
  needsMfa: false,
  prompt: new Set(),
  requireConsent: false,
  scopesFor: () => [],
  resume,
});

/**
 * The password, or a current code, asked again before a change (docs/multi-factor-sign-in.md), counted by the brute-force
 * policy like any sign-in. A right one is a proof: the session may add a factor for the next five
 * minutes (docs/decisions.md, "Adding a factor"). Answers with the words of a refusal, or `undefined`.
 */
export function identityProof(ctx: AppContext) {
  async function check(req: Request, user: User, form: Record<string, string>): Promise<string | undefined> {
    if (form.code) {
      const outcome = await ctx.signIn.secondStep({ user, code: form.code, amr: [], ...attemptOf(req, NO_CLIENT) });
      return outcome.ok ? undefined : refusalOf(outcome, 'proofCode').message;
    }
    if (form.password) {
      const outcome = await ctx.signIn.signIn({ username: user.username, password: form.password, ...attemptOf(req, NO_CLIENT) });
      // A right password of a user with a factor answers "second factor": the password was right all the same.
      if ((outcome.ok || outcome.reason === 'second_factor') && outcome.user.id === user.id) return undefined;
      return outcome.ok ? 'That password is not right.' : refusalOf(outcome, 'proofPassword').message;
    }
    return 'Enter your password or a code to confirm.';
  }

  return async (req: Request, s: SignedIn, form: Record<string, string>): Promise<string | undefined> => {
    const refused = await check(req, s.user, form);
    if (refused) return refused;
    await ctx.sessions.proved(s.session.id);
    s.session.provedAt = clock.now(); // this request's view too: the page it answers with may offer to add one
    return undefined;
  };
}
