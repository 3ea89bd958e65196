import type { Request } from 'express';
import type { AppContext } from '../context.ts';
import { CLIENT_ROLES } from '../clients/roles.ts';
import { scimErrors } from '../scim/errors.ts';
import type { ScimCaller } from '../scim/model.ts';

/**
 * Who calls the SCIM endpoint (docs/scim-provisioning.md "What the endpoint supports"): a SCIM
 * secret token, for its one backend; or a client_credentials access token of a client with the
 * role `scim`, for the first backend of plugin `scim`. No token, or a bad one, is 401 with
 * `WWW-Authenticate: Bearer`; a good token that may not call SCIM is 403.
 */
export async function scimCaller(ctx: AppContext, req: Request): Promise<ScimCaller> {
  const header = req.headers.authorization;
  const match = header ? /^bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match) throw scimErrors.unauthorized('a bearer token is required (Authorization: Bearer …)');
  const secret = match[1]!;
  const token = await ctx.scimTokens.verify(secret);
  if (token) return { backend: token.backend, tokenId: token.id, clientId: null };
  const bearer = await ctx.tokens.authenticate(secret);
  if (!bearer.ok) throw scimErrors.unauthorized('the token is not a valid SCIM token or access token');
  const { grant } = bearer;
  if (grant.userId !== null || !grant.client.roles.includes(CLIENT_ROLES.scim)) {
    throw scimErrors.forbidden(`a SCIM token, or a client_credentials token of a client with the role "${CLIENT_ROLES.scim}", is required`);
  }
  const backend = ctx.scim.clientBackend();
  if (!backend) throw scimErrors.forbidden('no backend of plugin "scim" is configured');
  return { backend, tokenId: null, clientId: grant.clientId };
}
