import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { type DatabaseOutage, isDatabaseUnavailable } from '../db/outage.ts';
import { bodyErrorStatus } from '../http/errors.ts';
import { ScimError } from '../scim/errors.ts';
import { SCIM_SCHEMAS, type ScimDocument } from '../scim/model.ts';

/** Every answer of the SCIM endpoint is `application/scim+json` (RFC 7644 §3.1) and never cached. */
export function sendScim(res: Response, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  res.status(status);
  res.setHeader('Cache-Control', 'no-store');
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (body === undefined) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.setHeader('Content-Type', 'application/scim+json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** A resource with its `ETag` (its `meta.version`), and `Location` when it was just created. */
export function sendResource(res: Response, status: number, doc: ScimDocument, created = false): void {
  const m = doc.meta as { version?: string; location?: string } | undefined;
  const headers: Record<string, string> = {};
  if (m?.version) headers.ETag = m.version;
  if (created && m?.location) headers.Location = m.location;
  sendScim(res, status, doc, headers);
}

export function sendError(res: Response, status: number, detail: string, scimType?: string, headers: Record<string, string> = {}): void {
  sendScim(res, status, { schemas: [SCIM_SCHEMAS.error], status: String(status), ...(scimType ? { scimType } : {}), detail }, headers);
}

export const scimNotFound: RequestHandler = (req, res) => sendError(res, 404, `no such SCIM endpoint: ${req.method} ${req.path}`);

/**
 * The one place the SCIM endpoint turns errors into answers (RFC 7644 §3.12): a ScimError as it
 * is; body-parser's refusals as 413 or 400 invalidSyntax; a database outage as 503, reported once per
 * outage; anything else logged with the request id and answered 500, never with a stack trace.
 */
export const scimErrorHandler =
  (logger: Logger, outage: DatabaseOutage): ErrorRequestHandler =>
  (err, req, res, _next) => {
    if (res.headersSent) {
      logger.error({ err, requestId: req.id }, 'error after the SCIM response started');
      res.destroy();
      return;
    }
    if (err instanceof ScimError) return sendError(res, err.status, err.detail, err.scimType, err.headers);
    if (isDatabaseUnavailable(err)) {
      outage.report(err, req.id);
      return sendError(res, 503, 'the database is unavailable; try again shortly', undefined, { 'Retry-After': '5' });
    }
    const status = bodyErrorStatus(err);
    if (status === 413) return sendError(res, 413, 'the request body is too large');
    if (status !== undefined) return sendError(res, 400, `the request body is not valid JSON (${(err as Error).message})`, 'invalidSyntax');
    logger.error({ err, requestId: req.id, path: req.path }, 'unexpected error at the SCIM endpoint');
    sendError(res, 500, `unexpected error (request id ${req.id})`);
  };
