import type { Request, RequestHandler, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { seal, unseal } from '../../crypto/sealed.ts';
import { randomToken, safeEqual } from '../../crypto/tokens.ts';
import { readParams } from '../../http/params.ts';
import { queryOf, type SpLogout } from '../../saml/idp.ts';
import type { Participant } from '../../saml/model.ts';
import { SamlInputError } from '../../saml/xml.ts';
import { cookieOptions, readCookie, secureCookies, SSO_COOKIE } from '../cookies.ts';
import { currentSession } from '../current-session.ts';
import { signedOutPage } from '../pages/logout.ts';
import { refuseSaml } from './refuse.ts';
import { originOf } from '../../http/origin.ts';

/** The logout chain in progress: the SPs still to tell, and whom to answer at the end. */
const CHAIN_COOKIE = 'lk_saml_slo';
const PURPOSE = 'saml-logout-chain';
const CHAIN_MS = 5 * 60 * 1000;

interface Chain {
  /** The RelayState sent with each LogoutRequest of the chain: this browser's chain, not another's. */
  nonce: string;
  sessionId: string;
  left: Participant[];
  /** The SP whose LogoutRequest started it, answered last. */
  origin: { entityId: string; requestId: string; relayState?: string };
}

/**
 * `/saml/v20/slo` (docs/saml-applications.md), HTTP-Redirect. An SP's LogoutRequest ends this browser's SSO session
 * through session-ends.ts (which queues back-channel logout for the session's OIDC clients), then the
 * session's other SAML SPs are told one after another by front-channel LogoutRequests (a redirect
 * chain, its state in a short-lived sealed cookie; each SP's LogoutResponse comes back here), and at
 * the end the SP that asked gets a signed LogoutResponse.
 */
export function samlSloHandler(ctx: AppContext): RequestHandler {
  const secure = secureCookies(ctx.config);

  /** The next SP of the chain, or the answer to the one that asked. */
  async function next(res: Response, chain: Chain): Promise<void> {
    while (chain.left.length > 0) {
      const participant = chain.left.shift()!;
      const url = await ctx.saml.logoutRequest(participant, chain.sessionId, chain.nonce);
      if (!url) continue;
      res.cookie(CHAIN_COOKIE, seal(ctx.csrfKey, PURPOSE, { ...chain }, CHAIN_MS), cookieOptions(secure, CHAIN_MS));
      return res.redirect(302, url);
    }
    res.clearCookie(CHAIN_COOKIE, cookieOptions(secure));
    const sp = await ctx.samlProviders.find(chain.origin.entityId);
    if (!sp?.singleLogoutServiceUrl) return void res.status(200).type('html').send(signedOutPage());
    res.redirect(302, await ctx.saml.logoutResponse({ sp, requestId: chain.origin.requestId }, chain.origin.relayState, true));
  }

  async function logoutRequest(req: Request, res: Response, logout: SpLogout, relayState: string | undefined): Promise<void> {
    const signedIn = await currentSession(ctx, req);
    const session = signedIn?.session ?? (await ctx.sessions.find(readCookie(req, SSO_COOKIE)));
    const origin = { entityId: logout.sp.entityId, requestId: logout.requestId, relayState };
    if (!session) return next(res, { nonce: '', sessionId: '', left: [], origin });
    if (!(await ctx.saml.concerns(logout, session.id))) {
      // Not this session's user at that SP: the session stays, and the SP is told the logout failed.
      ctx.logger.warn(
        { requestId: req.id, entityId: logout.sp.entityId },
        'SAML LogoutRequest for a NameID this session did not give that SP: session kept',
      );
      return void res.redirect(302, await ctx.saml.logoutResponse(logout, relayState, false));
    }
    const others = await ctx.saml.endSession(logout, session, originOf(req));
    res.clearCookie(SSO_COOKIE, cookieOptions(secure));
    return next(res, { nonce: randomToken(16), sessionId: session.id, left: others, origin });
  }

  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const p = readParams(req);
      const query = queryOf(req.originalUrl);
      if (p.SAMLRequest !== undefined) {
        return await logoutRequest(req, res, await ctx.saml.readLogoutRequest(p.SAMLRequest, query), p.RelayState);
      }
      if (p.SAMLResponse !== undefined) {
        // Another SP answered a LogoutRequest of the chain: on to the next one.
        await ctx.saml.readLogoutResponse(p.SAMLResponse, query);
        const chain = unseal<Chain>(ctx.csrfKey, PURPOSE, readCookie(req, CHAIN_COOKIE));
        if (!chain || !p.RelayState || !safeEqual(p.RelayState, chain.nonce))
          throw new SamlInputError('no single logout of this browser is in progress');
        return await next(res, chain);
      }
      throw new SamlInputError('no SAMLRequest or SAMLResponse');
    } catch (err) {
      refuseSaml(ctx, req, res, err, 'sign-out');
    }
  };
}
