import type { Request, RequestHandler, Response } from 'express';
import type { Client } from '../clients/model.ts';
import type { AppContext } from '../context.ts';
import { forClient } from '../errors/oauth.ts';
import { allowClientOrigin } from '../http/cors.ts';
import { readParams, type Params } from '../http/params.ts';
import { authenticateClient } from './token/client-auth.ts';
import { noteOnRequest } from '../telemetry/trace.ts';

/** What an endpoint a client calls with its credentials gets: the request's parameters and the authenticated client. */
export interface ClientCall {
  params: Params;
  client: Client;
}

export interface ClientEndpointOptions {
  /**
   * The answer, errors included, readable by the client's web origins (docs/connect-an-application.md): the endpoints
   * a browser app calls (token, revocation). Set from the moment the request names a registered
   * client, before its credentials are checked, so a browser app can read why it failed.
   */
  cors?: boolean;
  /** `Pragma: no-cache` beside `Cache-Control: no-store` (RFC 6749 §5.1, the token endpoint's answer). */
  pragma?: boolean;
}

/**
 * The opening every endpoint a client authenticates at shares (token, introspection, revocation,
 * device authorization): nothing cached, the parameters read, the client authenticated as at the
 * token endpoint (client-auth.ts; a public client by its id alone); and the errors: once the
 * request names a registered client, in the codes that client reads (`errorCodes`, `forClient`).
 * `handle` does the endpoint's own part.
 */
export function clientEndpoint(
  ctx: AppContext,
  handle: (req: Request, res: Response, call: ClientCall) => Promise<void>,
  options: ClientEndpointOptions = {},
): RequestHandler {
  return async (req, res, next) => {
    // Known once the request names a registered client: its errors are then in the codes it reads.
    let named: Client | undefined;
    try {
      res.setHeader('Cache-Control', 'no-store');
      if (options.pragma) res.setHeader('Pragma', 'no-cache');
      const params = readParams(req);
      const client = await authenticateClient(ctx, req, params, (found) => {
        named = found;
        // The request's span names the client (docs/tracing.md); a no-op when tracing is off.
        noteOnRequest('latchkey.client_id', found.clientId);
        if (options.cors) allowClientOrigin(req, res, found);
      });
      await handle(req, res, { params, client });
    } catch (err) {
      next(named ? forClient(err, named.errorCodes) : err);
    }
  };
}
