import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { isDatabaseUnavailable } from '../db/outage.ts';
import { errorPage } from '../login/pages.ts';
import { OAuthError } from '../oauth/errors.ts';
import { databaseUnavailable } from './errors.ts';

/**
 * How the HTML endpoints (authorize, logout) answer an error: an OAuth error as an error page with its
 * status; a database outage as a 503 page, logged once per outage; anything else logged with the
 * request id and shown as `server_error`, never a stack trace.
 */
export function sendPageError(ctx: AppContext, req: Request, res: Response, err: unknown): void {
  if (isDatabaseUnavailable(err)) {
    ctx.dbOutage.report(err, req.id);
    err = databaseUnavailable();
  }
  if (err instanceof OAuthError) {
    res.status(err.status).set(err.headers).type('html').send(errorPage(err.error, err.message));
    return;
  }
  ctx.logger.error({ err, requestId: req.id, path: req.path }, 'unexpected error');
  res.status(500).type('html').send(errorPage('server_error', `unexpected error (request id ${req.id})`));
}
