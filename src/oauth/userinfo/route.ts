import type { Request, RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { type ReleasedUser, type ReleasingClient, userClaims } from '../../access/release.ts';
import { bearerError, forClient, type OAuthErrorCode } from '../../errors/oauth.ts';
import type { BearerRefusal } from '../../tokens/service.ts';
import { sendJson } from '../../http/send-json.ts';
import { allowClientOrigin } from '../../http/cors.ts';

/** The token from `Authorization: Bearer`, `access_token` or `token` (docs/endpoints.md); exactly one of them. */
function presentedToken(req: Request): string {
  const found: string[] = [];
  const header = req.headers.authorization;
  if (header && /^bearer /i.test(header)) found.push(header.slice(7).trim());
  for (const source of [req.query, req.body !== undefined && req.is('application/x-www-form-urlencoded') ? req.body : undefined]) {
    if (!source) continue;
    for (const name of ['access_token', 'token']) {
      const v = (source as Record<string, unknown>)[name];
      // An empty value is an omitted parameter (RFC 6749 §3.1, docs/decisions.md "Empty parameters").
      if (v === undefined || v === '') continue;
      if (typeof v !== 'string') throw bearerError('invalid_request', `${name} is repeated`);
      found.push(v);
    }
  }
  if (found.length > 1) throw bearerError('invalid_request', 'the access token is given more than once');
  if (!found[0]) throw bearerError('invalid_access_token', 'an access token is required');
  return found[0];
}

interface TokenUser {
  clientId: string;
  /** What the token's client is told of a user (read with the token). */
  client: ReleasingClient;
  scopes: string[];
  user: ReleasedUser;
}

/** Each refusal of the token service, as these two endpoints have always said it (docs/endpoints.md). */
const refusals: Record<BearerRefusal, [OAuthErrorCode, string]> = {
  unknown: ['invalid_access_token', 'the access token is invalid or revoked'],
  expired: ['access_token_exprise', 'the access token has expired'],
  user_gone: ['invalid_access_token', 'the user no longer exists'],
  user_disabled: ['invalid_access_token', 'the user is disabled'],
  oauth_disabled: ['app_unsupport_oauth', 'this application may not use OAuth'],
};

/** The token service decides whether the token is good; these endpoints need it issued for a user too. */
async function resolveToken(ctx: AppContext, req: Request): Promise<TokenUser> {
  const bearer = await ctx.tokens.authenticate(presentedToken(req));
  if (!bearer.ok) {
    // A token that was issued (expired, its user gone) names its client, whose codes apply; an unknown one names none.
    const client = bearer.clientId ? await ctx.clients.find(bearer.clientId) : undefined;
    const err = bearerError(...refusals[bearer.refusal]);
    throw client ? forClient(err, client.errorCodes) : err;
  }
  const { grant } = bearer;
  // A client_credentials token has no user: it is for resource servers (introspection), not here.
  if (!grant.user) {
    const client = await ctx.clients.find(grant.clientId);
    const err = bearerError('invalid_access_token', 'the access token was not issued for a user');
    throw client ? forClient(err, client.errorCodes) : err;
  }
  return { clientId: grant.clientId, client: grant.client, scopes: grant.scopes, user: grant.user };
}

const handler =
  (ctx: AppContext, shape: (t: TokenUser) => Record<string, unknown>): RequestHandler =>
  async (req, res, next) => {
    try {
      res.setHeader('Cache-Control', 'no-store');
      const token = await resolveToken(ctx, req);
      // CORS for the token's client's browser app; a request without Origin skips the lookup.
      if (req.headers.origin) {
        const client = await ctx.clients.find(token.clientId);
        if (client) allowClientOrigin(req, res, client);
      }
      sendJson(res, shape(token));
    } catch (err) {
      next(err);
    }
  };

/** `/api/oauth/v20/me`: MaxKey's shape. */
export const meHandler = (ctx: AppContext) =>
  handler(ctx, ({ clientId, scopes, user }) => ({
    userid: user.id,
    uid: user.username,
    username: user.username,
    displayName: user.displayName ?? user.username,
    email: user.email,
    groups: user.groups,
    client_id: clientId,
    scope: scopes.join(' '),
  }));

/**
 * `/connect/v10/userinfo`: OIDC UserInfo, the claims the token's scopes allow and the client's own
 * (its roles and the mappings aimed at userinfo, docs/access-and-claims.md).
 */
export const userinfoHandler = (ctx: AppContext) =>
  handler(ctx, ({ client, scopes, user }) => userClaims(client, user, scopes, 'userinfo'));
