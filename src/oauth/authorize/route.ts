import type { Request, RequestHandler } from 'express';
import { clientApplication } from '../../access/service.ts';
import type { AppContext } from '../../context.ts';
import { sendPageError } from '../../web/page-errors.ts';
import { showStep, type Place } from '../../web/sign-in/show.ts';
import { signInSteps, type Flow } from '../../web/sign-in/steps.ts';
import { oauthError } from '../../errors/oauth.ts';
import { readParams } from '../../http/params.ts';
import { grantableScopes } from '../../clients/scopes.ts';
import { needsSecondFactor } from '../../mfa/second-factor.ts';
import { parseAuthorizeRequest, RedirectError, type AuthorizeRequest } from './request.ts';
import { sendAuthorizationResponse } from './respond.ts';
import { noteOnRequest } from '../../telemetry/trace.ts';

/** The browser sign-in this request asks for (web/sign-in/steps.ts). */
const flowOf = (ctx: AppContext, req: Request, request: AuthorizeRequest): Flow => ({
  clientId: request.client.clientId,
  // docs/access-and-claims.md: its access policy, checked after the sign-in and before consent.
  application: clientApplication(request.client),
  // docs/multi-factor-sign-in.md: a client (or server) that needs a second factor.
  needsMfa: needsSecondFactor(ctx.config.mfa, request.client).required,
  prompt: request.prompt,
  maxAge: request.maxAge,
  idp: request.idp,
  // Back here after an upstream's callback, whose sign-in counts as fresh for it (web/sign-in/fresh.ts).
  resume: `${req.baseUrl + req.path}?${new URLSearchParams(request.carried)}`,
  requireConsent: request.client.requireConsent,
  // docs/identity-backends.md "Desktop single sign-on": false, the login form only.
  kerberos: request.client.kerberos,
  // The admin scope is never granted to a user without an admin role (docs/admin-api.md).
  scopesFor: (user) => grantableScopes(request.scopes, user),
});

/** Every page of the sign-in posts back here with the request's own parameters. */
const placeOf = (req: Request, request: AuthorizeRequest): Place => ({
  action: req.baseUrl + req.path,
  fields: request.carried,
  clientName: request.client.name,
  continueLabel: `Continue to ${request.client.name}`,
});

/**
 * `/oauth/v20/authorize`: validate the whole request, let the browser sign-in (web/) show its pages
 * until the user is signed in and has consented, then send the code back (by redirect, or a page
 * that posts it for response_mode=form_post). The forms post back here with the request's own
 * parameters, so there is no stored "pending request" and no open redirect.
 */
export function authorizeHandler(ctx: AppContext): RequestHandler {
  const steps = signInSteps(ctx);

  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const params = readParams(req);
      const request = await parseAuthorizeRequest(ctx, params);
      noteOnRequest('latchkey.client_id', request.client.clientId);
      const step = await steps.next(req, res, params, flowOf(ctx, req, request));
      if (step.show === 'refused')
        throw new RedirectError(oauthError(step.error, step.description), request.redirectUri, request.state, request.responseMode);
      if (step.show !== 'continue') return await showStep(ctx, req, res, step, placeOf(req, request));

      const { session } = step.signedIn;
      const code = await ctx.tokens.issueCode({
        client: request.client,
        userId: step.signedIn.user.id,
        sessionId: session.id,
        redirectUri: request.redirectUri,
        scope: step.scopes.join(' '),
        nonce: request.nonce ?? null,
        codeChallenge: request.codeChallenge ?? null,
        codeChallengeMethod: request.codeChallengeMethod ?? null,
        authTime: session.authTime,
        amr: session.amr,
        resource: request.resource ?? null,
      });
      // The document names the code both `code` and `tokencode`: send both.
      // RFC 9207: `iss` tells the client which server answered (mix-up attacks).
      sendAuthorizationResponse(req, res, request.responseMode, request.redirectUri, {
        code,
        tokencode: code,
        state: request.state,
        iss: ctx.config.publicUrl,
      });
    } catch (err) {
      if (err instanceof RedirectError) {
        sendAuthorizationResponse(req, res, err.responseMode, err.redirectUri, {
          error: err.oauth.error,
          error_description: err.oauth.message,
          state: err.state,
          iss: ctx.config.publicUrl,
        });
      } else {
        sendPageError(ctx, req, res, err);
      }
    }
  };
}
