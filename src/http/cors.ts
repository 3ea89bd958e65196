import type { Request, RequestHandler, Response } from 'express';
import type { Client } from '../clients/model.ts';
import { webOriginsOf } from '../clients/web-origins.ts';

/**
 * CORS for browser apps (docs/connect-an-application.md). A client's endpoints (token, revocation, userinfo, me) allow the
 * one origin asking, and only when it is one of that client's web origins: never `*`, which would let
 * any page read the answer, and never credentials, since these endpoints take no cookies. An origin
 * that is not allowed gets no CORS headers; the answer is otherwise the same, and the browser hides it.
 */
const ALLOWED_METHODS = 'GET, POST';
const ALLOWED_HEADERS = 'Authorization, Content-Type';

/** Marks the answer readable by the request's origin when it is one of the client's web origins. */
export function allowClientOrigin(req: Request, res: Response, client: Pick<Client, 'webOrigins' | 'redirectUris'>): void {
  const origin = req.headers.origin;
  // Checked first: most requests carry no Origin, and they pay nothing for CORS.
  if (origin && webOriginsOf(client).includes(origin)) allow(res, origin);
}

function allow(res: Response, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.append('Vary', 'Origin');
}

/**
 * The preflight (`OPTIONS`), which names no client: allowed when the origin is some client's web
 * origin; the request itself is then checked against its own client. Always 204: the headers alone
 * say whether the browser may go on.
 */
export const clientPreflight =
  (originRegistered: (origin: string) => Promise<boolean>): RequestHandler =>
  async (req, res, next) => {
    try {
      const origin = req.headers.origin;
      if (origin && (await originRegistered(origin))) {
        allow(res, origin);
        res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
        res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
        res.setHeader('Access-Control-Max-Age', '600');
      }
      res.status(204).end();
    } catch (err) {
      next(err);
    }
  };

/** Discovery and JWKS are public documents: any page may read them. */
export const publicCors: RequestHandler = (_req, res, next) => {
  res.setHeader('Access-Control-Allow-Origin', '*');
  next();
};

/** Their preflight, for a page that sends a header beyond the CORS-safelisted ones. */
export const publicPreflight: RequestHandler = (_req, res) => {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Allow-Methods', 'GET');
  res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
  res.status(204).end();
};
