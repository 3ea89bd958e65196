import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { type DatabaseOutage, isDatabaseUnavailable } from '../db/outage.ts';
import { databaseUnavailable, OAuthError } from '../errors/oauth.ts';

/** The status of one of body-parser's refusals (http-errors with a 4xx status); undefined for anything else. */
export const bodyErrorStatus = (err: { status?: unknown; statusCode?: unknown } | undefined): number | undefined => {
  const status = typeof err?.status === 'number' ? err.status : typeof err?.statusCode === 'number' ? err.statusCode : undefined;
  return status !== undefined && status >= 400 && status < 500 ? status : undefined;
};

/**
 * The one place errors become responses: OAuth errors as their JSON wire format; body-parser's
 * refusals (oversize, bad encoding, corrupt gzip) as `invalid_request` with their status; a database
 * outage as 503 `temporarily_unavailable`, logged once per outage; anything else logged with the
 * request id and answered `server_error`, never a stack trace.
 */
export const errorHandler =
  (logger: Logger, outage: DatabaseOutage): ErrorRequestHandler =>
  (err, req, res, _next) => {
    if (res.headersSent) {
      logger.error({ err, requestId: req.id }, 'error after the response started');
      res.destroy();
      return;
    }
    res.setHeader('Cache-Control', 'no-store');
    if (isDatabaseUnavailable(err)) {
      outage.report(err, req.id);
      err = databaseUnavailable();
    }
    if (err instanceof OAuthError) {
      res.status(err.status).set(err.headers).json(err.toJSON());
      return;
    }
    const status = bodyErrorStatus(err);
    if (status !== undefined) {
      const description =
        status === 413
          ? 'the request body is too large'
          : `malformed request body (${typeof err.type === 'string' ? err.type : err.message})`;
      res.status(status).json({ error: 'invalid_request', error_description: description });
      return;
    }
    logger.error({ err, requestId: req.id, path: req.path }, 'unexpected error');
    res.status(500).json({ error: 'server_error', error_description: `unexpected error (request id ${req.id})` });
  };

export const notFound: RequestHandler = (req, res) => {
  res.status(404).json({ error: 'invalid_request', error_description: `no such endpoint: ${req.method} ${req.path}` });
};
