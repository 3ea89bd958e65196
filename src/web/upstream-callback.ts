import type { RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { sendPageError } from './page-errors.ts';
import { errorPage } from './pages/error.ts';
import { showStep, type Place } from './sign-in/show.ts';
import { upstreamSteps } from './sign-in/upstream.ts';

/** The callback shows no form: only its error page or a redirect back to the original request. */
const nowhere: Place = { action: '/account', fields: {}, clientName: 'Latchkey', continueLabel: 'Continue' };

/** `GET /login/upstream/<id>/callback` (docs/upstream-identity-providers.md): an upstream identity provider sends the browser back here. */
export function upstreamCallbackHandler(ctx: AppContext): RequestHandler<{ id: string }> {
  const steps = upstreamSteps(ctx);
  return async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const step = await steps.callback(req, res, req.params.id);
      if (!step) return void res.status(404).type('html').send(errorPage('invalid_request', 'no such identity provider'));
      await showStep(ctx, req, res, step, nowhere);
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };
}
