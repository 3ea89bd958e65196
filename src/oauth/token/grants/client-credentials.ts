import { oauthError } from '../../../errors/oauth.ts';
import { joinResources } from '../../../clients/resource.ts';
import { resourcesParam } from '../../resources-param.ts';
import type { Grant } from '../grant.ts';
import { requestedScopes } from '../../../clients/scopes.ts';

/** A token for the client itself, no user; confidential clients only. */
export const clientCredentialsGrant: Grant = async (_ctx, _req, p, client) => {
  if (!client.confidential) throw oauthError('unauthorized_client', 'a public client cannot use client_credentials');
  const userScopes = new Set(['openid', 'profile', 'email', 'groups', 'offline_access']);
  const fallback = client.scopes.filter((s) => !userScopes.has(s));
  const resources = resourcesParam(p);
  return { userId: null, scopes: requestedScopes(p.scope, client.scopes, fallback), resource: resources ? joinResources(resources) : null };
};
