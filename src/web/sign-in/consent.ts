import type { Request } from 'express';
import type { AppContext } from '../../context.ts';
import { checkCsrfToken } from '../csrf.ts';
import type { SignedIn } from '../current-session.ts';
import { expiredForm } from '../refusals.ts';
import type { Flow, Step } from './step.ts';

/**
 * Consent, for a client with `requireConsent` (docs/endpoints.md, 7): asked once per user and scope set; a
 * request for a subset of what was granted asks nothing, `prompt=consent` asks again.
 */
export function consentStep(ctx: AppContext) {
  return async (req: Request, form: Record<string, string>, flow: Flow, signedIn: SignedIn): Promise<Step> => {
    const { user } = signedIn;
    const scopes = flow.scopesFor(user);
    const go: Step = { show: 'continue', signedIn, scopes };
    if (!flow.requireConsent) return go;
    if (req.method === 'POST' && form._action === 'consent') {
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { show: 'consent', status: 403, user, scopes, error: expiredForm.other };
      if (form.decision !== 'allow') return { show: 'refused', error: 'access_denied', description: 'the user denied access' };
      await ctx.consents.grant(user.id, flow.clientId, scopes);
      await ctx.audit.record({ kind: 'consent.granted', userId: user.id, clientId: flow.clientId, ip: req.ip, requestId: req.id, details: { scopes } });
      return go;
    }
    const granted = await ctx.consents.granted(user.id, flow.clientId);
    if (!flow.prompt.has('consent') && scopes.every((s) => granted.has(s))) return go;
    if (flow.prompt.has('none')) return { show: 'refused', error: 'consent_required', description: 'the user has not consented to these scopes' };
    return { show: 'consent', status: 200, user, scopes };
  };
}
