import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { oauthError } from '../../errors/oauth.ts';
import { clientEndpoint } from '../client-endpoint.ts';
import { originOf } from '../../http/origin.ts';

/**
 * RFC 7009 revocation: 200 for a revoked or unknown token; another client's token is refused unless
 * the caller holds the `admin` role.
 */
export function revokeHandler(ctx: AppContext): RequestHandler {
  return clientEndpoint(
    ctx,
    async (req, res, { params: p, client }) => {
      const token = p.token;
      if (!token) throw oauthError('invalid_request', 'token is required');
      // Revoked and audited (`token.revoked`) by the token service.
      const outcome = await ctx.tokens.revoke(token, client, originOf(req));
      if (outcome === 'other_client') throw oauthError('unauthorized_client', 'the token was not issued to this client');
      res.status(200).end();
    },
    { cors: true },
  );
}
