import type { RequestHandler } from 'express';
import type { GrantType } from '../../clients/model.ts';
import type { AppContext } from '../../context.ts';
import { oauthError } from '../../errors/oauth.ts';
import { clientEndpoint, KeptClientChanged } from '../client-endpoint.ts';
import { auditTrail, type Grant } from './grant.ts';
import { authorizationCodeGrant } from './grants/authorization-code.ts';
import { clientCredentialsGrant } from './grants/client-credentials.ts';
import { passwordGrant } from './grants/password.ts';
import { refreshTokenGrant } from './grants/refresh-token.ts';
import { deviceCodeGrant } from './grants/device-code.ts';
import { sendJson } from '../../http/send-json.ts';

const grants: Record<GrantType, Grant> = {
  authorization_code: authorizationCodeGrant,
  password: passwordGrant,
  refresh_token: refreshTokenGrant,
  client_credentials: clientCredentialsGrant,
  'urn:ietf:params:oauth:grant-type:device_code': deviceCodeGrant,
};

/**
 * `/oauth/v20/token`. Shared steps for every grant, in docs/decisions.md's order: authenticate the client,
 * check the grant type and that the client may use it, run the grant, then have the token service
 * issue (tokens, id_token, audit) and answer. A grant fills in only its own part and cannot skip a
 * shared step.
 */
export function tokenHandler(ctx: AppContext): RequestHandler {
  return clientEndpoint(
    ctx,
    async (req, res, { params: p, client, keptVersion }) => {
      // The document's own example sends a tokencode and no grant_type.
      const grantType = p.grant_type ?? (p.code || p.tokencode ? 'authorization_code' : undefined);
      if (!grantType) throw oauthError('invalid_grant_type', 'grant_type is required');
      if (!Object.hasOwn(grants, grantType)) throw oauthError('invalid_grant_type', `grant_type ${grantType} is not supported`);
      if (!client.grantTypes.includes(grantType as GrantType)) {
        if (grantType === 'refresh_token') throw oauthError('unsupported_refresh_token', 'this client may not use refresh tokens');
        throw oauthError('unauthorized_client', `this client may not use the ${grantType} grant`);
      }

      const result = await grants[grantType as GrantType](ctx, req, p, client);
      const issued = await ctx.tokens.issue(
        { ...result, client, grantType: grantType as GrantType, ...(keptVersion === undefined ? {} : { clientVersion: keptVersion }) },
        auditTrail(ctx, req),
      );
      if (issued === 'client_changed') throw new KeptClientChanged();
      if (issued === 'code_replayed') throw oauthError('invalid_code', 'the code was already used');
      if (issued === 'refresh_reused') throw oauthError('invalid_refresh_token', 'the refresh token is invalid or was already used');
      ctx.metrics.tokenIssued(grantType);

      const body: Record<string, unknown> = {
        access_token: issued.accessToken,
        token_type: 'bearer',
        expires_in: issued.expiresIn,
        remind_in: issued.expiresIn,
        scope: issued.scope,
      };
      if (issued.refreshToken) body.refresh_token = issued.refreshToken;
      if (issued.idToken) body.id_token = issued.idToken;
      sendJson(res, body);
    },
    {
      cors: true,
      pragma: true,
      // A client_credentials token is the request's one write: its insert checks the kept client's
      // version (src/tokens/queries.ts), so the version is not read first. Not for a browser's request
      // (an Origin), whose CORS headers are set from the client before anything is checked.
      checksClientVersion: (p, req) => p.grant_type === 'client_credentials' && req.headers.origin === undefined,
    },
  );
}
