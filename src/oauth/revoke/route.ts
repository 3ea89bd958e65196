import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import type { Client } from '../../clients/model.ts';
import { forClient, oauthError } from '../../errors/oauth.ts';
import { readParams } from '../../http/params.ts';
import { allowClientOrigin } from '../../http/cors.ts';
import { authenticateClient } from '../token/client-auth.ts';

/**
 * RFC 7009 revocation: 200 for a revoked or unknown token; another client's token is refused unless
 * the caller holds the `admin` role.
 */
export function revokeHandler(ctx: AppContext): RequestHandler {
  return async (req, res, next) => {
    // Known once the request names a registered client: its errors are then in the codes it reads.
    let named: Client | undefined;
    try {
      res.setHeader('Cache-Control', 'no-store');
      const p = readParams(req);
      const client = await authenticateClient(ctx, req, p, (found) => {
        named = found;
        allowClientOrigin(req, res, found);
      });
      const token = p.token;
      if (!token) throw oauthError('invalid_request', 'token is required');
      const outcome = await ctx.tokens.revokeToken(token, client.clientId, client.roles.includes('admin'));
      if (outcome === 'other_client') throw oauthError('unauthorized_client', 'the token was not issued to this client');
      if (outcome === 'revoked') {
        await ctx.audit.record({ kind: 'token.revoked', clientId: client.clientId, actorClientId: client.clientId, ip: req.ip, requestId: req.id });
      }
      res.status(200).end();
    } catch (err) {
      next(named ? forClient(err, named.errorCodes) : err);
    }
  };
}
