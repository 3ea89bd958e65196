import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { sendPageError } from '../page-errors.ts';
import { SamlInputError } from '../../saml/xml.ts';
import { OAuthError } from '../../errors/oauth.ts';
import { errorPage } from '../pages/error.ts';

/**
 * How the SAML endpoints answer a message they refuse (docs/saml-applications.md "Errors"): a 400 page in this browser
 * and one log line; nothing is sent to any URL the message named. Anything else is the pages' usual
 * error (a 503 page in an outage, `server_error` logged with the request id).
 */
export function refuseSaml(ctx: AppContext, req: Request, res: Response, err: unknown, request: 'sign-in' | 'sign-out'): void {
  if (err instanceof SamlInputError || err instanceof OAuthError) {
    ctx.logger.warn({ requestId: req.id, path: req.path, reason: err.message }, 'SAML message refused');
    res
      .status(400)
      .type('html')
      .send(errorPage('invalid_request', err.message, request));
    return;
  }
  sendPageError(ctx, req, res, err, request);
}
