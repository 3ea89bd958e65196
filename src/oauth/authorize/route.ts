import type { Request, RequestHandler, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { checkCsrfToken, issueCsrfToken } from '../../login/csrf.ts';
import { sendPageError } from '../../http/page-errors.ts';
import { consentPage, loginPage } from '../../login/pages.ts';
import { passwordAuthenticator } from '../../login/passport.ts';
import type { User } from '../../users/queries.ts';
import { OAuthError, oauthError } from '../errors.ts';
import { grantableScopes } from '../token/scopes.ts';
import { readParams } from '../params.ts';
import { parseAuthorizeRequest, RedirectError, redirectWith, type AuthorizeRequest } from './request.ts';
import { secondFactorSteps } from './second-factor.ts';
import { currentSession, type SignedIn } from '../../login/current-session.ts';
import { provedRecently } from '../../login/sessions.ts';
import { clock } from '../../clock.ts';
import type { AccountRefusal } from '../../identity/contract.ts';

/** The login page's words for a right password that the account's state refuses. */
const refusedPage: Record<AccountRefusal, string> = {
  disabled: 'This account is disabled.',
  account_expired: 'This account has expired.',
  password_expired: 'Your password has expired. Change it, then sign in again.',
  password_must_change: 'Your password must be changed before you can sign in.',
};

/**
 * `/oauth/v20/authorize`: validate the whole request, then sign in (login page), then consent when the
 * client asks for it, then redirect back with the code. The login and consent forms post back here
 * with the request's own parameters, so there is no stored "pending request" and no open redirect.
 */
export function authorizeHandler(ctx: AppContext): RequestHandler {
  const secure = ctx.config.publicUrl.startsWith('https:');
  const authenticate = passwordAuthenticator(ctx.signIn);
  const mfa = secondFactorSteps(ctx);

  const render = (req: Request, res: Response, status: number, page: 'login' | 'consent', a: AuthorizeRequest, extra: { error?: string; user?: User; username?: string } = {}) => {
    const form = {
      action: req.baseUrl + req.path,
      request: a.carried,
      csrfToken: issueCsrfToken(req, res, ctx.csrfKey, secure),
      clientName: a.client.name,
      error: extra.error,
    };
    const html =
      page === 'login'
        ? loginPage({ ...form, username: extra.username, extra: mfa.loginPasskeyButton({ action: form.action, fields: form.request, csrfToken: form.csrfToken }) })
        : consentPage({ ...form, scopes: a.scopes, username: extra.user?.username ?? '' });
    res.status(status).type('html').send(html);
  };

  const redirect = (req: Request, res: Response, uri: string) => res.redirect(req.method === 'POST' ? 303 : 302, uri);

  /** The login form's POST. Answers with a page itself unless the user is now signed in. */
  async function submitLogin(req: Request, res: Response, a: AuthorizeRequest, form: Record<string, string>): Promise<SignedIn | undefined> {
    const username = (form.username ?? '').trim();
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) {
      render(req, res, 403, 'login', a, { error: 'The sign-in form expired. Please try again.', username });
      return undefined;
    }
    const outcome = await authenticate(req, res, a.client.clientId);
    if (!outcome.ok) {
      if (outcome.reason === 'second_factor') {
        await mfa.secondStepAfterPassword(req, res, a, outcome.user);
      } else if (outcome.reason === 'throttled') {
        res.setHeader('Retry-After', String(outcome.retryAfter));
        render(req, res, 429, 'login', a, { error: `too many failed attempts, retry after ${outcome.retryAfter} s`, username });
      } else if (outcome.reason === 'unavailable') {
        render(req, res, 503, 'login', a, { error: 'The directory is unreachable right now. Please try again shortly.', username });
      } else {
        const error = outcome.reason === 'invalid_credentials' || outcome.reason === 'invalid_code' ? 'Invalid username or password.' : refusedPage[outcome.reason];
        render(req, res, 401, 'login', a, { error, username });
      }
      return undefined;
    }
    return mfa.startSession(res, outcome.user, outcome.amr, outcome.deviceCookie);
  }

  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const p = readParams(req);
      const parsed = await parseAuthorizeRequest(ctx, p);
      const action = req.method === 'POST' ? p._action : undefined;
      const fail = (error: OAuthError['error'], description: string) => new RedirectError(oauthError(error, description), parsed.redirectUri, parsed.state);

      let signedIn = await currentSession(ctx, req);
      let fresh = false;
      if (action === 'login') {
        signedIn = await submitLogin(req, res, parsed, p);
        if (!signedIn) return;
        fresh = true;
      } else if (action === 'mfa') {
        const stepped = await mfa.submitCode(req, res, parsed, p, signedIn);
        if (!stepped) {
          if (!res.headersSent) render(req, res, 403, 'login', parsed, { error: 'The sign-in form expired. Please sign in again.' });
          return;
        }
        ({ signedIn, fresh } = stepped);
      } else if (action === 'passkey') {
        const stepped = await mfa.submitPasskey(req, res, parsed, p, signedIn);
        if (!stepped) return;
        if ('error' in stepped) {
          render(req, res, stepped.status, 'login', parsed, { error: stepped.error });
          return;
        }
        ({ signedIn, fresh } = stepped);
      } else if (action === 'enrol' && signedIn && provedRecently(signedIn.session)) {
        // An older session is asked for its password again below, before its factor is added.
        await mfa.submitEnrolment(req, res, parsed, p, signedIn);
        return;
      }
      const tooOld = signedIn && parsed.maxAge !== undefined && clock.now() - signedIn.session.authTime > parsed.maxAge * 1000;
      if (!signedIn || (!fresh && (parsed.prompt.has('login') || tooOld))) {
        if (parsed.prompt.has('none')) throw fail('login_required', 'the user is not signed in');
        render(req, res, 200, 'login', parsed);
        return;
      }
      // SPEC 8: a client (or server) that needs a second factor, and a session that has not used one.
      if (!signedIn.session.amr.includes('mfa') && (ctx.config.mfa.required || parsed.client.requireMfa)) {
        if (parsed.prompt.has('none')) throw fail('login_required', 'this application needs a second factor');
        const demanded = await mfa.demand(req, res, parsed, signedIn);
        if (demanded === 'asked') return;
        if (demanded === 'sign_in_again') {
          render(req, res, 200, 'login', parsed, { error: 'Sign in again to set up a second factor.', username: signedIn.user.username });
          return;
        }
      }
      const { session, user } = signedIn;
      // The admin scope is never granted to a user without the admin role (SPEC 3).
      const a = { ...parsed, scopes: grantableScopes(parsed.scopes, user) };

      if (a.client.requireConsent) {
        if (action === 'consent') {
          if (!checkCsrfToken(req, ctx.csrfKey, p.csrf_token)) {
            render(req, res, 403, 'consent', a, { error: 'The form expired. Please try again.', user });
            return;
          }
          if (p.decision !== 'allow') throw fail('access_denied', 'the user denied access');
          await ctx.consents.grant(user.id, a.client.clientId, a.scopes);
          await ctx.audit.record({ kind: 'consent.granted', userId: user.id, clientId: a.client.clientId, ip: req.ip, requestId: req.id, details: { scopes: a.scopes } });
        } else {
          const granted = await ctx.consents.granted(user.id, a.client.clientId);
          if (a.prompt.has('consent') || a.scopes.some((s) => !granted.has(s))) {
            if (a.prompt.has('none')) throw fail('consent_required', 'the user has not consented to these scopes');
            render(req, res, 200, 'consent', a, { user });
            return;
          }
        }
      }

      const code = await ctx.tokens.issueCode({
        client: a.client,
        userId: user.id,
        sessionId: session.id,
        redirectUri: a.redirectUri,
        scope: a.scopes.join(' '),
        nonce: a.nonce ?? null,
        codeChallenge: a.codeChallenge ?? null,
        codeChallengeMethod: a.codeChallengeMethod ?? null,
        authTime: session.authTime,
        amr: session.amr,
      });
      // The document names the code both `code` and `tokencode`: send both.
      // RFC 9207: `iss` tells the client which server answered (mix-up attacks).
      redirect(req, res, redirectWith(a.redirectUri, { code, tokencode: code, state: a.state, iss: ctx.config.publicUrl }));
    } catch (err) {
      if (err instanceof RedirectError) {
        redirect(req, res, redirectWith(err.redirectUri, { error: err.oauth.error, error_description: err.oauth.message, state: err.state, iss: ctx.config.publicUrl }));
      } else {
        sendPageError(ctx, req, res, err);
      }
    }
  };
}
