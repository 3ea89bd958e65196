import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { kerberosRefusalOf } from '../refusals.ts';
import type { SignedIn } from '../current-session.ts';
import type { SignInStrategies } from '../passport.ts';
import { startSession } from '../start-session.ts';
import { negotiateToken } from '../strategies/negotiate.ts';
import type { Flow, PageStep, SignedInNow } from './step.ts';

/**
 * Desktop single sign-on (docs/identity-backends.md "Desktop single sign-on"), the browser's side (RFC 4559): every
 * sign-in page shows a browser without a session the login form with `401` and `WWW-Authenticate:
 * Negotiate`, so a browser without a ticket shows the form at once and one with a ticket sends it as
 * `Authorization: Negotiate`. That token starts the SSO session (`amr: ["wia"]`), with the mutual
 * authentication token in the answer's `WWW-Authenticate`; the steps after it (the second factor when
 * required, consent) are the same as after a password. Only when a backend has `kerberos`, and never
 * for a client with `kerberos: false`.
 */
export function kerberosSteps(ctx: AppContext, strategies: SignInStrategies) {
  const offered = (flow: Flow): boolean => ctx.kerberos.enabled && flow.kerberos !== false;

  return {
    /** The login page for a browser without a session: with the challenge when Kerberos is offered. */
    loginPage: (flow: Flow): PageStep => (offered(flow) ? { show: 'login', status: 401, negotiate: true } : { show: 'login', status: 200 }),

    /** This request brings a ticket to answer: Kerberos offered, no session yet, and the header. */
    brings: (req: Request, flow: Flow, current: SignedIn | undefined): boolean =>
      offered(flow) && !current && negotiateToken(req) !== undefined,

    /** The ticket's answer: signed in, or the login form with why not (and no new challenge). */
    async answer(req: Request, res: Response, flow: Flow): Promise<PageStep | SignedInNow> {
      const outcome = await strategies.negotiate(req, res, { clientId: flow.clientId });
      if (!outcome.ok) {
        const refusal = kerberosRefusalOf(outcome);
        return { show: 'login', status: refusal.status, error: refusal.message };
      }
      if (outcome.mutual) res.setHeader('WWW-Authenticate', `Negotiate ${outcome.mutual}`);
      return { signedIn: await startSession(ctx, res, outcome.user, outcome.amr), fresh: true };
    },
  };
}
