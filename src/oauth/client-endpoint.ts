import type { Request, RequestHandler, Response } from 'express';
import type { Client } from '../clients/model.ts';
import type { AppContext } from '../context.ts';
import { forClient, OAuthError } from '../errors/oauth.ts';
import { allowClientOrigin } from '../http/cors.ts';
import { readParams, type Params } from '../http/params.ts';
import { authenticateClient } from './token/client-auth.ts';
import { noteOnRequest } from '../telemetry/trace.ts';

/** What an endpoint a client calls with its credentials gets: the request's parameters and the authenticated client. */
export interface ClientCall {
  params: Params;
  client: Client;
  /**
   * Set when `client` is this process's kept copy, not checked against its row (`checksClientVersion`):
   * the version the handler must find in the same statement as its own read or write, or throw
   * `KeptClientChanged` (before it answers anything).
   */
  keptVersion?: number;
}

/** The client's row changed since this process kept its copy: the request is run again on the row as it is. */
export class KeptClientChanged extends Error {
  constructor() {
    super('the client changed since its copy was kept');
  }
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
  /**
   * Whether this request may run on the kept copy of its client without reading the row's version
   * first, because the handler checks that version itself in a statement it runs anyway
   * (`ClientCall.keptVersion`): one round trip instead of two. Only for a handler that writes nothing
   * before that check, or writes in that one statement only.
   */
  checksClientVersion?: (params: Params, req: Request) => boolean;
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
    const onNamed = (found: Client) => {
      named = found;
      // The request's span names the client (docs/tracing.md); a no-op when tracing is off.
      noteOnRequest('latchkey.client_id', found.clientId);
      if (options.cors) allowClientOrigin(req, res, found);
    };
    // The kept copy the request ran on unchecked (`checksClientVersion`), if it did.
    const ran: { unchecked: { client: Client; version: number } | undefined } = { unchecked: undefined };
    // `read`: the client as just read, when it was (the rerun after a refusal on a stale copy).
    const run = async (params: Params, mayUseKept: boolean, read?: { client: Client | undefined }) => {
      const lookup = read
        ? () => Promise.resolve(read.client)
        : mayUseKept
          ? (id: string) => {
              ran.unchecked = ctx.clients.keptCopy(id);
              return ran.unchecked ? Promise.resolve(ran.unchecked.client) : ctx.clients.find(id);
            }
          : undefined;
      const client = await authenticateClient(ctx, req, params, onNamed, lookup);
      const keptVersion = ran.unchecked?.version;
      await handle(req, res, { params, client, ...(keptVersion === undefined ? {} : { keptVersion }) });
    };
    try {
      res.setHeader('Cache-Control', 'no-store');
      if (options.pragma) res.setHeader('Pragma', 'no-cache');
      const params = readParams(req);
      try {
        await run(params, options.checksClientVersion?.(params, req) ?? false);
      } catch (err) {
        // On an unchecked copy, a refusal stands only if the row is still that copy (find gives back the
        // kept object while its version holds); else, and when the write found another version, the
        // request runs again on the row as it is. Nothing was written or answered before either.
        const copy = ran.unchecked;
        const refusal = err instanceof OAuthError || err instanceof KeptClientChanged;
        if (!copy || !refusal || res.headersSent) throw err;
        const read = err instanceof KeptClientChanged ? undefined : { client: await ctx.clients.find(copy.client.clientId) };
        if (read?.client === copy.client) throw err;
        named = undefined;
        ran.unchecked = undefined;
        await run(params, false, read);
      }
    } catch (err) {
      next(named ? forClient(err, named.errorCodes) : err);
    }
  };
}
