import type { Request, RequestHandler, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { clientlessFlow } from '../account/proof.ts';
import { checkCsrfToken } from '../csrf.ts';
import { currentSession, type SignedIn } from '../current-session.ts';
import { sendPageError } from '../page-errors.ts';
import { appsPage } from '../pages/apps.ts';
import { expiredForm } from '../refusals.ts';
import { showStep, type Place } from '../sign-in/show.ts';
import type { PageStep } from '../sign-in/step.ts';
import { signInSteps } from '../sign-in/steps.ts';

export const APPS_PATH = '/apps';

/** A sign-in at "My applications" belongs to no client, as the account page's does: no consent, no client's second factor. */
const appsFlow = clientlessFlow(APPS_PATH);

const appsPlace: Place = { action: APPS_PATH, fields: {}, clientName: 'your applications', continueLabel: 'Continue to your applications' };

/**
 * `/apps`, "My applications" (docs/access-and-claims.md): the applications the signed-in user may use
 * and start from here. Without a session the page signs the user in itself (the sign-in's own steps,
 * as the account page does) and then shows the list. A read: nothing is recorded.
 */
export function appsHandler(ctx: AppContext): RequestHandler {
  const { answers } = signInSteps(ctx);
  const signIn = (req: Request, res: Response, step: PageStep) => showStep(ctx, req, res, step, appsPlace);

  async function show(res: Response, s: SignedIn): Promise<void> {
    const apps = await ctx.myApps.of(s.user);
    res
      .status(200)
      .type('html')
      .send(appsPage({ username: s.user.username, apps }));
  }

  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const signedIn = await currentSession(ctx, req);
      if (req.method !== 'POST') {
        if (signedIn) return await show(res, signedIn);
        // A Kerberos ticket answering the login page's challenge (docs/identity-backends.md "Desktop single sign-on").
        const answered = await answers.answer(req, res, {}, appsFlow, undefined);
        if (answered && 'show' in answered) return await signIn(req, res, answered);
        if (answered) return res.redirect(303, APPS_PATH);
        return await signIn(req, res, answers.loginPage(appsFlow));
      }
      const form = (req.body ?? {}) as Record<string, string>;
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) {
        if (signedIn) return res.redirect(303, APPS_PATH);
        return await signIn(req, res, { show: 'login', status: 403, error: expiredForm.signIn });
      }
      const answered = await answers.answer(req, res, form, appsFlow, signedIn);
      if (answered && 'show' in answered) return await signIn(req, res, answered);
      if (answered || signedIn) return res.redirect(303, APPS_PATH);
      await signIn(req, res, { show: 'login', status: 200 });
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };
}
