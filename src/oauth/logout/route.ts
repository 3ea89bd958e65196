import { redirectUriMatches } from '../../clients/redirect-match.ts';
import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { sendPageError } from '../../web/page-errors.ts';
import { cookieOptions, readCookie, SSO_COOKIE } from '../../web/cookies.ts';
import { checkCsrfToken, issueCsrfToken } from '../../web/csrf.ts';
import { logoutConfirmPage, signedOutPage } from '../../web/pages/logout.ts';
import { redirectWith } from '../authorize/request.ts';
import { oauthError } from '../../errors/oauth.ts';
import { sessionSid } from '../../crypto/tokens.ts';
import { readParams } from '../../http/params.ts';
import { originOf } from '../../http/origin.ts';

/** The parameters the confirmation form carries back. */
const carried = ['client_id', 'post_logout_redirect_uri', 'state', 'ui_locales'] as const;

/**
 * RP-initiated logout (`/connect/v10/logout`): ends the SSO session with its codes and the tokens
 * issued under it (session-ends.ts), and redirects only to a `post_logout_redirect_uri` registered
 * for the client named by `client_id` or the `id_token_hint`'s audience. Without a valid hint for the
 * signed-in user, the user is asked first (a CSRF-protected form), so a link or an image cannot sign
 * anyone out.
 */
export function logoutHandler(ctx: AppContext): RequestHandler {
  const secure = ctx.config.publicUrl.startsWith('https:');
  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const p = readParams(req);
      const hint = p.id_token_hint;
      const claims = hint ? await ctx.keys.verifyOwnIdToken(hint) : undefined;
      if (hint && !claims) throw oauthError('invalid_request', 'id_token_hint is not a token of this server');
      const audience = typeof claims?.aud === 'string' ? claims.aud : undefined;
      const clientId = p.client_id ?? audience;
      if (audience && clientId !== audience) throw oauthError('invalid_request', 'client_id differs from the id_token_hint audience');

      const client = clientId ? await ctx.clients.find(clientId) : undefined;
      if (clientId && !client) throw oauthError('invalid_request', 'client_id is not a registered client');
      const target = p.post_logout_redirect_uri;
      if (target) {
        if (!client) throw oauthError('invalid_request', 'post_logout_redirect_uri needs client_id or id_token_hint');
        if (!redirectUriMatches([...client.postLogoutRedirectUris, ...client.redirectUris], target)) {
          throw oauthError('invalid_request', 'post_logout_redirect_uri is not registered for this client');
        }
      }

      const session = await ctx.sessions.find(readCookie(req, SSO_COOKIE));
      if (session) {
        // The hint must be an id_token of this very session's user (and of this session, when it says).
        const hinted = claims?.sub === session.userId && (claims.sid === undefined || claims.sid === sessionSid(session.id));
        const confirmed = req.method === 'POST' && p._action === 'logout' && checkCsrfToken(req, ctx.csrfKey, p.csrf_token);
        if (!hinted && !confirmed) {
          const user = await ctx.users.find(session.userId);
          const fields: Record<string, string> = {};
          for (const name of carried) if (p[name] !== undefined) fields[name] = p[name]!;
          if (clientId) fields.client_id = clientId;
          const csrfToken = issueCsrfToken(req, res, ctx.csrfKey, secure);
          res
            .status(200)
            .type('html')
            .send(logoutConfirmPage({ action: req.baseUrl + req.path, fields, csrfToken, username: user?.username ?? '' }));
          return;
        }
        await ctx.sessions.end(session.id, { reason: 'logout', userId: session.userId, clientId, origin: originOf(req) });
      }
      res.clearCookie(SSO_COOKIE, cookieOptions(secure));
      // An empty state is no state: nothing to hand back, so nothing appended (not even `?state=`).
      if (target) res.redirect(req.method === 'POST' ? 303 : 302, redirectWith(target, { state: p.state }));
      else res.status(200).type('html').send(signedOutPage());
    } catch (err) {
      sendPageError(ctx, req, res, err, 'sign-out');
    }
  };
}
