import type { RequestHandler } from 'express';
import type { GrantType } from '../../clients/queries.ts';
import type { AppContext } from '../../context.ts';
import { atHash } from '../../keys/signing-keys.ts';
import { scopedClaims } from '../claims.ts';
import { oauthError } from '../errors.ts';
import { param, readParams } from '../params.ts';
import { authenticateClient } from './client-auth.ts';
import type { Grant } from './grant.ts';
import { authorizationCodeGrant } from './grants/authorization-code.ts';
import { clientCredentialsGrant } from './grants/client-credentials.ts';
import { passwordGrant } from './grants/password.ts';
import { refreshTokenGrant } from './grants/refresh-token.ts';
import { clock } from '../../clock.ts';
import { sendJson } from '../../http/send-json.ts';

const grants: Record<GrantType, Grant> = {
  authorization_code: authorizationCodeGrant,
  password: passwordGrant,
  refresh_token: refreshTokenGrant,
  client_credentials: clientCredentialsGrant,
};

/**
 * `/oauth/v20/token`. Shared steps for every grant, in SPEC 7's order: authenticate the client,
 * check the grant type and that the client may use it, run the grant, then issue tokens, the
 * id_token and the response. A grant fills in only its own part and cannot skip a shared step.
 */
export function tokenHandler(ctx: AppContext): RequestHandler {
  return async (req, res, next) => {
    try {
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Pragma', 'no-cache');
      const p = readParams(req);
      const client = await authenticateClient(ctx, req, p);

      // The document's own example sends a tokencode and no grant_type.
      const grantType = param(p, 'grant_type') ?? (param(p, 'code') || param(p, 'tokencode') ? 'authorization_code' : undefined);
      if (!grantType) throw oauthError('invalid_grant_type', 'grant_type is required');
      if (!Object.hasOwn(grants, grantType)) throw oauthError('invalid_grant_type', `grant_type ${grantType} is not supported`);
      if (!client.grantTypes.includes(grantType as GrantType)) {
        if (grantType === 'refresh_token') throw oauthError('unsupported_refresh_token', 'this client may not use refresh tokens');
        throw oauthError('unauthorized_client', `this client may not use the ${grantType} grant`);
      }

      const result = await grants[grantType as GrantType](ctx, req, p, client);
      const scope = result.scopes.join(' ');
      const issued = await ctx.tokens.issue({
        client,
        userId: result.userId,
        scope,
        familyId: result.familyId,
        codeHash: result.codeHash,
        sessionId: result.sessionId,
        authTime: result.authTime,
        amr: result.amr,
        withRefresh: client.grantTypes.includes('refresh_token'),
        spend: result.spend,
      });
      if (issued === 'replayed') {
        // A concurrent request spent it first; what that one issued is revoked now.
        if (result.spend && 'code' in result.spend) {
          await ctx.audit.record({ kind: 'code.replayed', clientId: client.clientId, ip: req.ip, requestId: req.id });
          throw oauthError('invalid_code', 'the code was already used');
        }
        await ctx.audit.record({ kind: 'token.reuse_detected', clientId: client.clientId, ip: req.ip, requestId: req.id });
        throw oauthError('invalid_refresh_token', 'the refresh token is invalid or was already used');
      }
      ctx.metrics.tokenIssued(grantType);

      const body: Record<string, unknown> = {
        access_token: issued.accessToken,
        token_type: 'bearer',
        expires_in: issued.expiresIn,
        remind_in: issued.expiresIn,
        scope,
      };
      if (issued.refreshToken) body.refresh_token = issued.refreshToken;
      if (result.userId && result.scopes.includes('openid')) {
        const user = result.user ?? (await ctx.users.find(result.userId));
        if (user) {
          const now = Math.floor(clock.now() / 1000);
          body.id_token = await ctx.keys.sign(
            {
              ...scopedClaims(user, result.scopes),
              iss: ctx.config.publicUrl,
              aud: client.clientId,
              azp: client.clientId,
              iat: now,
              exp: now + ctx.config.tokens.idTokenTtl,
              auth_time: result.authTime ? Math.floor(result.authTime / 1000) : now,
              ...(result.amr?.length ? { amr: result.amr } : {}),
              at_hash: atHash(issued.accessToken),
              ...(result.nonce ? { nonce: result.nonce } : {}),
              ...(result.sessionId ? { sid: result.sessionId } : {}),
            },
            client.idTokenAlg,
          );
        }
      }
      await ctx.tokenAudit.issued({ kind: 'token.issued', userId: result.userId, clientId: client.clientId, ip: req.ip, requestId: req.id, details: { grant: grantType, scope } });
      sendJson(res, body);
    } catch (err) {
      next(err);
    }
  };
}
