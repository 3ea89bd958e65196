import type { Request } from 'express';
import type { AppContext } from '../../context.ts';
import { checkCsrfToken } from '../csrf.ts';
import type { SignedIn } from '../current-session.ts';
import { originOf } from '../../http/origin.ts';
import { expiredForm } from '../refusals.ts';
import type { Flow, Step } from './step.ts';

/**
 * The answer to the consent form, for a client with `requireConsent` (docs/decisions.md "Consent"):
 * allowed, the grant is remembered (the consents service writes `consent.granted`); denied, the
 * client gets `access_denied`. Whether to ask at all is the step rules' (next-step.ts).
 */
export function consentStep(ctx: AppContext) {
  return async (req: Request, form: Record<string, string>, flow: Flow, signedIn: SignedIn): Promise<Step> => {
    const { user } = signedIn;
    const scopes = flow.scopesFor(user);
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { show: 'consent', status: 403, user, scopes, error: expiredForm.other };
    if (form.decision !== 'allow') return { show: 'refused', error: 'access_denied', description: 'the user denied access' };
    await ctx.consents.grant(user.id, flow.clientId, scopes, originOf(req));
    return { show: 'continue', signedIn, scopes };
  };
}
