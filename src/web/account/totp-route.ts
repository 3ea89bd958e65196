import type { Request, RequestHandler, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { sendPageError } from '../page-errors.ts';
import { provedRecently } from '../../login/sessions.ts';
import { qrSvg } from '../../mfa/qr.ts';
import { secureCookies } from '../cookies.ts';
import { checkCsrfToken, issueCsrfToken } from '../csrf.ts';
import { currentSession, type SignedIn } from '../current-session.ts';
import { proofPage } from '../pages/account.ts';
import { enrolTotpPage } from '../pages/second-factor.ts';
import { expiredForm } from '../refusals.ts';
import { identityProof } from './proof.ts';
import { accountViews } from './view.ts';

const ACTION = '/account/mfa/totp';

/**
 * `/account/mfa/totp`: TOTP enrolment from the account page. docs/decisions.md: no secret is made or shown for a
 * session that has not proved a factor for five minutes; it is asked for one first (`prove`).
 */
export function totpHandler(ctx: AppContext): RequestHandler {
  const confirm = identityProof(ctx);
  const views = accountViews(ctx);
  const csrf = (req: Request, res: Response) => issueCsrfToken(req, res, ctx.csrfKey, secureCookies(ctx.config));

  /** The POST's answer: whether the session is proved now, and the page's status and error. */
  async function answer(
    req: Request,
    signedIn: SignedIn,
    form: Record<string, string>,
  ): Promise<{ proved: boolean; status: number; error?: string; codes?: string[] }> {
    const proved = provedRecently(signedIn.session);
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { proved, status: 403, error: expiredForm.other };
    if (form._action === 'prove') {
      const refused = await confirm(req, signedIn, form);
      return refused ? { proved, status: 401, error: refused } : { proved: true, status: 200 };
    }
    if (!proved) return { proved, status: 401, error: 'Confirm it is you first.' };
    const codes = await ctx.mfa.confirmTotp(signedIn.user, form.code ?? '', { ip: req.ip, requestId: req.id, keep: signedIn.session.id });
    if (codes) return { proved, status: 200, codes };
    return { proved, status: 400, error: 'That code is not right: check the time on your phone and try the current one.' };
  }

  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const signedIn = await currentSession(ctx, req);
      if (!signedIn || (await ctx.mfa.status(signedIn.user.id)).totp) return res.redirect(303, '/account');
      const got =
        req.method === 'POST'
          ? await answer(req, signedIn, (req.body ?? {}) as Record<string, string>)
          : { proved: provedRecently(signedIn.session), status: 200 };
      if ('codes' in got && got.codes) return await views.show(req, res, signedIn, { show: 'recovery_codes', codes: got.codes });
      if (!got.proved) {
        const withCode = await ctx.mfa.hasFactor(signedIn.user.id);
        return void res
          .status(got.status)
          .type('html')
          .send(
            proofPage({ action: ACTION, csrfToken: csrf(req, res), purpose: 'set up an authenticator app', withCode, error: got.error }),
          );
      }
      const enrolment = (await ctx.mfa.pendingTotp(signedIn.user)) ?? (await ctx.mfa.startTotp(signedIn.user));
      if (!enrolment) return res.redirect(303, '/account');
      const page = enrolTotpPage({
        action: ACTION,
        fields: {},
        csrfToken: csrf(req, res),
        secret: enrolment.secret,
        qrSvg: await qrSvg(enrolment.uri),
        error: got.error,
      });
      res.status(got.status).type('html').send(page);
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };
}
