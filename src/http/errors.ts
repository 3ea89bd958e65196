import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { OAuthError } from '../oauth/errors.ts';

/**
 * The one place errors become responses: OAuth errors as their JSON wire format, body-parser's
 * refusals as `invalid_request` with their status (413 for oversize), anything else logged with the
 * request id and answered `server_error`, never a stack trace.
 */
export const errorHandler =
  (logger: Logger): ErrorRequestHandler =>
  (err, req, res, _next) => {
    if (res.headersSent) {
      logger.error({ err, requestId: req.id }, 'error after the response started');
      res.destroy();
      return;
    }
    res.setHeader('Cache-Control', 'no-store');
    if (err instanceof OAuthError) {
      res.status(err.status).set(err.headers).json(err.toJSON());
      return;
    }
    const status = typeof err?.status === 'number' ? err.status : 500;
    if (status >= 400 && status < 500 && typeof err?.type === 'string') {
      const description = status === 413 ? 'the request body is too large' : `malformed request body (${err.type})`;
      res.status(status).json({ error: 'invalid_request', error_description: description });
      return;
    }
    logger.error({ err, requestId: req.id, path: req.path }, 'unexpected error');
    res.status(500).json({ error: 'server_error', error_description: `unexpected error (request id ${req.id})` });
  };

export const notFound: RequestHandler = (req, res) => {
  res.status(404).json({ error: 'invalid_request', error_description: `no such endpoint: ${req.method} ${req.path}` });
};
