import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { oauthError } from '../../errors/oauth.ts';
import { sendJson } from '../../http/send-json.ts';
import { paths } from '../../paths.ts';
import { clientScopes } from '../../clients/scopes.ts';
import { clientEndpoint } from '../client-endpoint.ts';

/**
 * `POST /oauth/v20/device_authorization` (RFC 8628 §3.1-3.2): the client authenticates as at the
 * token endpoint (a public client by its id alone), must hold the device grant, and gets the codes.
 * A client that may not use single sign-on gets none: the user would sign in at /device, a browser
 * flow (`app_unsupport_sso`, as at the authorize endpoint; `unauthorized_client` in RFC 6749 codes).
 */
export function deviceAuthorizationHandler(ctx: AppContext): RequestHandler {
  // No CORS: a device calls it, not a browser app.
  return clientEndpoint(ctx, async (_req, res, { params: p, client: asking }) => {
    if (!asking.grantTypes.includes('urn:ietf:params:oauth:grant-type:device_code'))
      throw oauthError('unauthorized_client', 'this client may not use the device authorization grant');
    if (!asking.ssoEnabled) throw oauthError('app_unsupport_sso', 'this application may not use single sign-on');
    const scopes = clientScopes(p.scope, asking);
    const started = await ctx.deviceCodes.start(asking, scopes);
    const verificationUri = ctx.config.publicUrl + paths.device;
    sendJson(res, {
      device_code: started.deviceCode,
      user_code: started.userCode,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${started.userCode}`,
      expires_in: started.expiresIn,
      interval: started.interval,
    });
  });
}
