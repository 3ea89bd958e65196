import type { RequestHandler } from 'express';
import { applicationClaims } from '../../access/release.ts';
import type { AppContext } from '../../context.ts';
import { audClaim } from '../../clients/resource.ts';
import { oauthError } from '../../errors/oauth.ts';
import { sendJson } from '../../http/send-json.ts';
import { clientEndpoint, KeptClientChanged } from '../client-endpoint.ts';
import type { Bearer } from '../../tokens/bearer.ts';

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
  // No CORS, unlike the token and revocation endpoints: resource servers call it, not browser apps.
  return clientEndpoint(
    ctx,
    async (_req, res, { params: p, client: caller, keptVersion }) => {
      const token = p.token;
      if (!token) throw oauthError('invalid_request', 'token is required');
      const readsAny = caller.roles.some((r) => READS_ANY_TOKEN.includes(r));
      const mayRead = (clientId: string) => clientId === caller.clientId || readsAny;
      const base = { iss: ctx.config.publicUrl, token_type: 'bearer' };

      // The token service's answer is the one /me, userinfo and the admin API get: a token refused
      // there (its client's oauthEnabled off, its user disabled or gone, expired) is inactive here.
      // The caller's copy, when unchecked, is checked by the same read.
      let access: Bearer | undefined;
      if (keptVersion !== undefined) {
        const asked = await ctx.tokens.authenticateAsked(token, caller.clientId);
        if (asked.askerVersion !== keptVersion) throw new KeptClientChanged();
        access = asked.bearer;
      } else if (p.token_type_hint !== 'refresh_token') {
        access = await ctx.tokens.authenticate(token);
      }
      if (access?.ok && mayRead(access.grant.clientId)) {
        const { grant } = access;
        sendJson(res, {
          // The token's client's own claims of its user (docs/access-and-claims.md), under the protocol's.
          ...(grant.user ? applicationClaims(grant.client, grant.user, grant.scopes, 'introspection') : {}),
          ...base,
          active: true,
          client_id: grant.clientId,
          scope: grant.scopes.join(' '),
          exp: Math.floor(grant.expiresAt / 1000),
          iat: Math.floor(grant.createdAt / 1000),
          // RFC 8707: whom the token is for; a token from before audiences were kept names none.
          ...(grant.audience ? { aud: audClaim(grant.audience) } : {}),
          // A client_credentials token is the client's own: RFC 9068's `sub` is then the client id.
          ...(grant.user ? { sub: grant.user.id, username: grant.user.username } : { sub: grant.clientId }),
        });
        return;
      }
      // A token known as an access token is not looked up again as a refresh token.
      const known = access !== undefined && (access.ok || access.refusal !== 'unknown');
      const refresh = known ? undefined : await ctx.tokens.liveRefresh(token);
      if (refresh && mayRead(refresh.clientId)) {
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
    },
    // Introspection writes nothing: a caller's unchecked copy is checked by the access token's read
    // (one statement, not two), and a request on a stale one runs again on the row as it is. A
    // refresh token hint skips that read, so the caller's version is read first, as elsewhere.
    { checksClientVersion: (p) => p.token_type_hint !== 'refresh_token' },
  );
}
