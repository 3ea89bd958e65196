import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { sendPageError } from '../page-errors.ts';
import { checkCsrfToken } from '../csrf.ts';
import { currentSession } from '../current-session.ts';
import { expiredForm } from '../refusals.ts';
import { signInSteps } from '../sign-in/steps.ts';
import { accountActions } from './actions.ts';
import { clientlessFlow } from './proof.ts';
import { totpHandler } from './totp-route.ts';
import { accountViews } from './view.ts';

/** A sign-in at the account page: no client, so no second factor demanded and no consent. */
const accountFlow = clientlessFlow('/account');

/**
 * `/account` and `/account/mfa/totp` (docs/multi-factor-sign-in.md): the signed-in user's own page. Without a session, the
 * account page signs the user in itself (the sign-in's own steps: password, then the second step),
 * then shows the account. Every form carries a CSRF token; each signed-in action is its own function
 * (actions.ts), and every change of the factors or the password ends the user's other sessions (docs/decisions.md).
 */
export function accountHandlers(ctx: AppContext): { account: RequestHandler; totp: RequestHandler } {
  const { answers } = signInSteps(ctx);
  const views = accountViews(ctx);
  const actions = accountActions(ctx);

  const account: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const signedIn = await currentSession(ctx, req);
      if (req.method !== 'POST') {
        if (signedIn) return await views.show(req, res, signedIn, { show: 'account' });
        // A Kerberos ticket answering the login page's challenge (docs/identity-backends.md "Desktop single sign-on").
        const answered = await answers.answer(req, res, {}, accountFlow, undefined);
        if (answered && 'show' in answered) return await views.signIn(req, res, answered);
        if (answered) return res.redirect(303, '/account');
        return await views.signIn(req, res, answers.loginPage(accountFlow));
      }
      const form = (req.body ?? {}) as Record<string, string>;
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) {
        const expired = { status: 403, error: expiredForm.other };
        return signedIn
          ? await views.show(req, res, signedIn, { show: 'account', ...expired })
          : await views.signIn(req, res, { show: 'login', ...expired });
      }
      const answered = await answers.answer(req, res, form, accountFlow, signedIn);
      if (answered && 'show' in answered) return await views.signIn(req, res, answered);
      if (answered) return res.redirect(303, '/account');
      if (!signedIn) return await views.signIn(req, res, { show: 'login', status: 200 });
      const action = actions.get(form._action ?? '');
      if (!action) return res.redirect(303, '/account');
      await views.show(req, res, signedIn, await action({ req, signedIn, form }));
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };

  return { account, totp: totpHandler(ctx) };
}
