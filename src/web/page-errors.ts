import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { isDatabaseUnavailable } from '../db/outage.ts';
import { errorPage } from './pages/error.ts';
import { databaseUnavailable, OAuthError } from '../errors/oauth.ts';

/**
 * How the HTML endpoints (authorize, logout) answer an error: an OAuth error as an error page with its
 * status; a database outage as a 503 page, logged once per outage; anything else logged with the
 * request id and shown as `server_error`, never a stack trace.
 */
export function sendPageError(
  ctx: AppContext,
  req: Request,
  res: Response,
  err: unknown,
  request: 'sign-in' | 'sign-out' = 'sign-in',
): void {
  if (isDatabaseUnavailable(err)) {
    ctx.dbOutage.report(err, req.id);
    err = databaseUnavailable();
  }
  if (err instanceof OAuthError) {
    // docs/endpoints.md: a request that cannot be sent back to its client is shown on a 400 page.
    res
      .status(err.status >= 500 ? err.status : 400)
      .set(err.headers)
      .type('html')
      .send(errorPage(err.error, err.message, request));
    return;
  }
  ctx.logger.error({ err, requestId: req.id, path: req.path }, 'unexpected error');
  res
    .status(500)
    .type('html')
    .send(errorPage('server_error', `unexpected error (request id ${req.id})`, request));
}
