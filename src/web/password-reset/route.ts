import type { Request, RequestHandler, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { sendPageError } from '../page-errors.ts';
import type { ResetOrigin } from '../../password-reset/service.ts';
import { attemptOf } from '../attempt.ts';
import { secureCookies } from '../cookies.ts';
import { checkCsrfToken, issueCsrfToken } from '../csrf.ts';
import { expiredForm } from '../refusals.ts';
import { donePage, forgotPage, linkProblemPage, resetPage, sentPage } from './pages.ts';

const field = (form: Record<string, unknown>, name: string): string => (typeof form[name] === 'string' ? (form[name] as string) : '');

/**
 * `/password/forgot` and `/password/reset` (docs/password-reset-by-mail.md). Every answer is `no-store`; the reset page,
 * whose address holds the link's token, also sends no Referer anywhere and posts the token in the
 * form body, never in a URL. Nothing logs request URLs (src/http/), so the token reaches no log.
 */
export function passwordResetHandlers(ctx: AppContext): { forgot: RequestHandler; reset: RequestHandler } {
  const csrf = (req: Request, res: Response) => issueCsrfToken(req, res, ctx.csrfKey, secureCookies(ctx.config));
  const originOf = (req: Request): ResetOrigin => {
    const { ip, requestId, deviceCookie } = attemptOf(req, '');
    return { ip, requestId, deviceCookie };
  };
  const send = (res: Response, status: number, html: string) => res.status(status).type('html').send(html);

  const forgot: RequestHandler = (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      if (req.method !== 'POST') return void send(res, 200, forgotPage({ csrfToken: csrf(req, res) }));
      const form = (req.body ?? {}) as Record<string, unknown>;
      if (!checkCsrfToken(req, ctx.csrfKey, field(form, 'csrf_token'))) {
        return void send(res, 403, forgotPage({ csrfToken: csrf(req, res), error: expiredForm.other }));
      }
      // Answered at once: the lookup and the mail run afterwards (same answer, same time, for anyone).
      ctx.passwordReset.request(field(form, 'identifier'), originOf(req));
      send(res, 200, sentPage());
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };

  const reset: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    try {
      const origin = originOf(req);
      const form = (req.method === 'POST' ? (req.body ?? {}) : req.query) as Record<string, unknown>;
      const token = field(form, 'token');
      // A passkey passed for this link: the form carries its proof on (a retry keeps it).
      let proof = field(form, 'factor_proof') || undefined;
      const show = async (status: number, error?: string) => {
        const link = await ctx.passwordReset.open(token, origin, proof);
        if (!link) return void send(res, 400, linkProblemPage('invalid', ctx.passwordReset.enabled));
        const carried = link.proved ? proof : undefined;
        send(
          res,
          status,
          resetPage({
            token,
            csrfToken: csrf(req, res),
            username: link.user.username,
            needsCode: link.needsCode,
            passkey: link.passkey,
            proof: carried,
            error,
          }),
        );
      };
      if (req.method !== 'POST') return await show(200);
      if (!checkCsrfToken(req, ctx.csrfKey, field(form, 'csrf_token'))) return await show(403, expiredForm.other);
      if (field(form, '_action') === 'passkey') {
        const passed = await ctx.passwordReset.passkey(
          { token, state: field(form, 'webauthn_state'), response: field(form, 'webauthn_response') },
          origin,
        );
        if (passed.ok) {
          proof = passed.proof;
          return await show(200);
        }
        if (passed.reason === 'invalid_link') return void send(res, 400, linkProblemPage('invalid', ctx.passwordReset.enabled));
        if (passed.reason === 'unavailable') return void send(res, 503, linkProblemPage('unavailable'));
        if (passed.retryAfter !== undefined) res.setHeader('Retry-After', String(passed.retryAfter));
        return await show(passed.status, passed.message);
      }
      const outcome = await ctx.passwordReset.complete(
        { token, password: field(form, 'password'), confirm: field(form, 'confirm'), code: field(form, 'code'), proof },
        origin,
      );
      if (outcome.ok) return void send(res, 200, donePage());
      if (outcome.reason === 'invalid_link') return void send(res, 400, linkProblemPage('invalid', ctx.passwordReset.enabled));
      if (outcome.reason === 'unavailable') return void send(res, 503, linkProblemPage('unavailable'));
      if (outcome.retryAfter !== undefined) res.setHeader('Retry-After', String(outcome.retryAfter));
      await show(outcome.status, outcome.message);
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };

  return { forgot, reset };
}
