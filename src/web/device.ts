import type { Request, RequestHandler, Response } from 'express';
import { clientApplication } from '../access/service.ts';
import type { AppContext } from '../context.ts';
import { sendPageError } from './page-errors.ts';
import { readParams } from '../http/params.ts';
import { grantableScopes } from '../clients/scopes.ts';
import { needsSecondFactor } from '../mfa/second-factor.ts';
import { paths } from '../paths.ts';
import { showUserCode } from '../tokens/device-codes.ts';
import { secureCookies } from './cookies.ts';
import { checkCsrfToken, issueCsrfToken } from './csrf.ts';
import { deviceApprovalPage, deviceCodePage, deviceDonePage } from './pages/device.ts';
import { expiredForm } from './refusals.ts';
import { showStep } from './sign-in/show.ts';
import { signInSteps } from './sign-in/steps.ts';
import { originOf } from '../http/origin.ts';

/** Why a typed code finds no request to decide: the page's status and words. */
const notFound = {
  unknown: [400, 'That code is not valid. Check the code your device shows and try again.'],
  expired: [400, 'That code has expired. Start again on your device to get a new one.'],
  decided: [400, 'That code was already used. Start again on your device to get a new one.'],
} as const;

/**
 * `/device` (RFC 8628 §3.3): the user types the code (or follows `verification_uri_complete`, which
 * prefills it), signs in through the same steps as the authorize endpoint (SSO session, second
 * factor, enrolment), then approves or denies. Every form posts back here with the code, so nothing
 * is pending between pages; every POST is CSRF-checked. Codes that find nothing count against the
 * address (brute-force policy), and a throttled address gets 429.
 */
export function deviceHandler(ctx: AppContext): RequestHandler {
  const steps = signInSteps(ctx);
  const csrf = (req: Request, res: Response) => issueCsrfToken(req, res, ctx.csrfKey, secureCookies(ctx.config));
  const codeForm = (req: Request, res: Response, status: number, error?: string, userCode?: string) =>
    res
      .status(status)
      .type('html')
      .send(deviceCodePage({ action: paths.device, csrfToken: csrf(req, res), error, userCode }));

  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const params = readParams(req);
      const typed = params.user_code?.trim();
      if (req.method === 'POST' && !checkCsrfToken(req, ctx.csrfKey, params.csrf_token))
        return codeForm(req, res, 403, expiredForm.other, typed);
      if (!typed) return codeForm(req, res, 200);

      const origin = originOf(req);
      const found = await ctx.deviceCodes.find(typed, req.ip ?? 'unknown', origin);
      if (!found.ok) {
        if (found.reason === 'throttled') {
          res.setHeader('Retry-After', String(found.retryAfter));
          return codeForm(req, res, 429, `Too many wrong codes from your network. Try again in ${found.retryAfter} seconds.`);
        }
        if (found.reason === 'no_client') return codeForm(req, res, 400, notFound.unknown[1]);
        // As at the authorize endpoint (app_unsupport_sso): no browser sign-in for this application.
        if (found.reason === 'sso_disabled')
          return codeForm(req, res, 403, `${found.client.name} may not use single sign-on. Ask your administrator.`);
        const [status, message] = notFound[found.reason];
        return codeForm(req, res, status, message, typed);
      }
      const { row, client } = found;
      const userCode = showUserCode(row.userCode);
      const asked = row.scope.split(' ').filter(Boolean);

      const step = await steps.next(req, res, params, {
        clientId: client.clientId,
        // docs/access-and-claims.md: a user the client's access policy refuses gets the 403 page, and no approval form.
        application: clientApplication(client),
        needsMfa: needsSecondFactor(ctx.config.mfa, client).required,
        prompt: new Set(),
        resume: `${paths.device}?${new URLSearchParams({ user_code: userCode })}`,
        // The approval page below is this flow's consent, asked every time.
        requireConsent: false,
        kerberos: client.kerberos,
        scopesFor: (user) => grantableScopes(asked, user),
      });
      if (step.show === 'refused') return codeForm(req, res, 400, step.description);
      if (step.show !== 'continue') {
        return await showStep(ctx, req, res, step, {
          action: paths.device,
          fields: { user_code: userCode },
          clientName: client.name,
          continueLabel: `Continue to ${client.name}`,
        });
      }

      const { session, user } = step.signedIn;
      if (req.method === 'POST' && params._action === 'device') {
        const approve = params.decision === 'approve';
        const by = { userId: user.id, sessionId: session.id, authTime: session.authTime, amr: session.amr, scopes: step.scopes };
        if (!(await ctx.deviceCodes.decide(row, approve, by, origin))) return codeForm(req, res, 400, notFound.decided[1]);
        const html = approve
          ? deviceDonePage('Device connected', `${client.name} is connected. You can go back to your device.`)
          : deviceDonePage('Request denied', `${client.name} was not connected. You can close this page.`);
        return res.status(200).type('html').send(html);
      }
      res
        .status(200)
        .type('html')
        .send(
          deviceApprovalPage({
            action: paths.device,
            csrfToken: csrf(req, res),
            clientName: client.name,
            username: user.username,
            scopes: step.scopes,
            userCode,
          }),
        );
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };
}
