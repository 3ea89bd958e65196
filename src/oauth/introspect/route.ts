import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { oauthError } from '../errors.ts';
import { param, readParams } from '../params.ts';
import { authenticateClient } from '../token/client-auth.ts';
import { clock } from '../../clock.ts';
import { sendJson } from '../../http/send-json.ts';

/**
 * Roles that let a client introspect every client's tokens. `introspect` is for resource servers:
 * it grants this and nothing else (the admin API checks for `admin` only), so an API that validates
 * tokens here no longer needs a role that could also create admins.
 */
const READS_ANY_TOKEN = ['introspect', 'admin'];

/**
 * RFC 7662 introspection for resource servers. The caller authenticates as a client and sees only
 * its own tokens, unless it holds the `introspect` (or `admin`) role; anything else is simply
 * `active: false`.
 */
export function introspectHandler(ctx: AppContext): RequestHandler {
  return async (req, res, next) => {
    try {
      res.setHeader('Cache-Control', 'no-store');
      const p = readParams(req);
      const caller = await authenticateClient(ctx, req, p);
      const token = param(p, 'token');
      if (!token) throw oauthError('invalid_request', 'token is required');
      const readsAny = caller.roles.some((r) => READS_ANY_TOKEN.includes(r));
      const mayRead = (clientId: string) => clientId === caller.clientId || readsAny;
      const now = clock.now();
      const base = { iss: ctx.config.publicUrl, token_type: 'bearer' };

      const access = p.token_type_hint === 'refresh_token' ? undefined : await ctx.tokens.findAccess(token);
      if (access && mayRead(access.clientId) && access.expiresAt > now) {
        sendJson(res, {
          ...base,
          active: true,
          client_id: access.clientId,
          scope: access.scopes.join(' '),
          exp: Math.floor(access.expiresAt / 1000),
          iat: Math.floor(access.createdAt / 1000),
          aud: access.clientId,
          ...(access.user ? { sub: access.user.id, username: access.user.username } : {}),
        });
        return;
      }
      const refresh = access ? undefined : await ctx.tokens.findRefresh(token);
      if (refresh && mayRead(refresh.clientId) && refresh.expiresAt > now && refresh.rotatedAt === null && refresh.revokedAt === null) {
        sendJson(res, {
          ...base,
          active: true,
          token_type: 'refresh_token',
          client_id: refresh.clientId,
          scope: refresh.scope,
          exp: Math.floor(refresh.expiresAt / 1000),
          sub: refresh.userId,
        });
        return;
      }
      sendJson(res, { active: false });
    } catch (err) {
      next(err);
    }
  };
}

