import type { Request, RequestHandler } from 'express';
import { samlApplication } from '../../access/service.ts';
import type { AppContext } from '../../context.ts';
import { seal, unseal } from '../../crypto/sealed.ts';
import { readParams, type Params } from '../../http/params.ts';
import { queryOf, SAML_PATHS, type SignOnRefusal, type SignOnRequest } from '../../saml/idp.ts';
import type { ServiceProvider } from '../../saml/model.ts';
import { SamlInputError } from '../../saml/xml.ts';
import { needsSecondFactor } from '../../mfa/second-factor.ts';
import { showStep } from '../sign-in/show.ts';
import { signInSteps } from '../sign-in/steps.ts';
import { refuseSaml } from './refuse.ts';
import { sendFormPost } from '../form-post.ts';
import { originOf } from '../../http/origin.ts';

/** The checked request, carried (sealed) through the sign-in's pages: checked once, its ID used once. */
const CARRIED = 'saml_request';
const PURPOSE = 'saml-sign-on';
const CARRY_MS = 15 * 60 * 1000;
/** SAML bindings 3.4.3 says 80 bytes; SPs write longer ones, so a generous bound, carried unchanged. */
const MAX_RELAY_STATE = 1024;

interface Carried {
  request: SignOnRequest;
  relayState?: string;
}

/**
 * `/saml/v20/sso` (docs/saml-applications.md): an AuthnRequest by HTTP-Redirect (GET) or HTTP-POST, or `?sp=<entityId>`
 * for IdP-initiated sign-on; then the same sign-in steps as OAuth (login page, second factor,
 * enrolment, the SSO session), whose forms post back here with the checked request sealed; then the
 * signed Response by the HTTP-POST binding to the request's (registered) ACS URL.
 */
export function samlSsoHandler(ctx: AppContext): RequestHandler {
  const steps = signInSteps(ctx);

  async function incoming(req: Request, p: Params): Promise<{ sp: ServiceProvider; carried: Carried; refusal?: SignOnRefusal }> {
    if (p[CARRIED] !== undefined) {
      const carried = unseal<Carried>(ctx.csrfKey, PURPOSE, p[CARRIED]);
      if (!carried) throw new SamlInputError('the sign-in form expired: go back to the application and sign in again');
      return { sp: await ctx.saml.spOf(carried.request), carried };
    }
    const relayState = p.RelayState;
    if (relayState !== undefined && relayState.length > MAX_RELAY_STATE)
      throw new SamlInputError(`RelayState is longer than ${MAX_RELAY_STATE} characters`);
    if (p.SAMLRequest !== undefined) {
      const binding = req.method === 'GET' ? 'redirect' : 'post';
      const { sp, request, refusal } = await ctx.saml.readAuthnRequest(binding, p.SAMLRequest, queryOf(req.originalUrl));
      return { sp, carried: { request, relayState }, refusal };
    }
    if (p.sp !== undefined) {
      const { sp, request } = await ctx.saml.idpInitiated(p.sp);
      return { sp, carried: { request, relayState } };
    }
    throw new SamlInputError('no SAMLRequest');
  }

  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const p = readParams(req);
      const { sp, carried, refusal } = await incoming(req, p);
      const { request, relayState } = carried;
      // A request the IdP will not serve as asked is answered at its (checked) ACS with the status, no page.
      if (refusal)
        return sendFormPost(res, request.acsUrl, { SAMLResponse: await ctx.saml.refusal(request, refusal), RelayState: relayState });
      // Both flags together: a fresh authentication that may show no page cannot happen, so the steps
      // refuse it and the SP gets NoPassive (SAML Core 3.4.1.1), never an assertion without re-authentication.
      const prompt = new Set<string>([...(request.isPassive ? ['none'] : []), ...(request.forceAuthn ? ['login'] : [])]);
      const sealed = seal(ctx.csrfKey, PURPOSE, { ...carried }, CARRY_MS);
      const carriedHere = `${SAML_PATHS.sso}?${new URLSearchParams({ [CARRIED]: sealed })}`;
      // The SP's auto-submitted form is a cross-site POST, which brings no SameSite=Lax cookie (no
      // `lk_sso`): the checked request goes on as a top-level GET here, which does.
      if (req.method === 'POST' && p[CARRIED] === undefined && p.SAMLRequest !== undefined) return void res.redirect(303, carriedHere);
      const step = await steps.next(req, res, p, {
        clientId: `saml:${sp.id}`,
        // docs/access-and-claims.md: SP- and IdP-initiated alike, a refused user gets the 403 page and the SP no assertion.
        application: samlApplication(sp),
        // A service provider has no `requireMfa` of its own: the server's `mfa.required` alone.
        needsMfa: needsSecondFactor(ctx.config.mfa).required,
        prompt,
        requireConsent: false,
        scopesFor: () => [],
        // Back here after an upstream provider's round trip (docs/upstream-identity-providers.md), with the checked request.
        resume: carriedHere,
      });
      if (step.show === 'refused')
        return sendFormPost(res, request.acsUrl, { SAMLResponse: await ctx.saml.noPassive(request), RelayState: relayState });
      if (step.show !== 'continue') {
        return await showStep(ctx, req, res, step, {
          action: SAML_PATHS.sso,
          fields: { [CARRIED]: sealed },
          clientName: sp.name,
          continueLabel: `Continue to ${sp.name}`,
        });
      }
      const response = await ctx.saml.signOn(sp, request, step.signedIn, originOf(req));
      sendFormPost(res, request.acsUrl, { SAMLResponse: response, RelayState: relayState });
    } catch (err) {
      refuseSaml(ctx, req, res, err, 'sign-in');
    }
  };
}
