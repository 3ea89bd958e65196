import { clientApplication } from '../../../access/service.ts';
import type { User } from '../../../users/model.ts';
import { originOf } from '../../../http/origin.ts';
import { BackendUnavailableError } from '../../../identity/contract.ts';
import { backendUnavailable, oauthError } from '../../../errors/oauth.ts';
import { resourcesParam } from '../../resources-param.ts';
import { outsideGrant, settledResources } from '../resources.ts';
import { auditTrail, type Grant } from '../grant.ts';
import { grantableScopes, requestedScopes } from '../../../clients/scopes.ts';
import { needsSecondFactor } from '../../../mfa/second-factor.ts';

/**
 * Rotation with reuse detection: each refresh token works once; a second use revokes the family.
 * The token is spent with the issue of its successor, in one transaction (docs/decisions.md). A token whose
 * sign-in had no second factor is not refreshed for a client that needs one now. Before that, the
 * user is re-read from their backend (a directory user removed or disabled there gets no new
 * tokens); if that backend is down the answer is `temporarily_unavailable` and the token stays usable.
 * Then the client's access policy, on the groups just read (docs/access-and-claims.md): a user taken
 * out of the group loses the refresh at its next use.
 */
export const refreshTokenGrant: Grant = async (ctx, req, p, client) => {
  const token = p.refresh_token;
  if (!token) throw oauthError('invalid_request', 'refresh_token is required');
  const resources = resourcesParam(p);
  // The one rule of a live refresh token (src/tokens/refresh-rule.ts, introspection's too). A reused
  // token's family is revoked and the reuse audited by the token service.
  const outcome = await ctx.tokens.checkRefresh(token, client, auditTrail(ctx, req));
  if (!outcome.ok) {
    if (outcome.reason === 'expired') throw oauthError('refresh_token_exprise', 'the refresh token has expired');
    if (outcome.reason === 'user_gone') throw oauthError('invalid_grant', 'the user no longer exists or is disabled');
    throw oauthError('invalid_refresh_token', 'the refresh token is invalid or was already used');
  }
  const { row } = outcome;
  // RFC 8707: a refresh token stays with the resources it was issued for.
  const other = outsideGrant(row.resource, resources);
  if (other.length > 0) throw oauthError('invalid_target', `resource not among those the refresh token was issued for: ${other.join(' ')}`);
  // docs/decisions.md: a client that needs a second factor now (or the server, `mfa.required`) refreshes no token
  // whose sign-in had none. The token is left as it is: signing in again with the factor is the way on.
  if (needsSecondFactor(ctx.config.mfa, client, row).missing) {
    throw oauthError('invalid_grant', 'this application now needs a second factor: sign in again');
  }
  // The user is re-read from their backend before the token is spent: if that fails (the directory
  // is down) the token stays usable for the retry.
  // (The stored user was read with the token, in the same query, and is there and enabled by the rule.)
  let user: User | null;
  try {
    user = await ctx.identity.refresh(row.user);
  } catch (err) {
    if (!(err instanceof BackendUnavailableError)) throw err;
    throw backendUnavailable();
  }
  if (!user) throw oauthError('invalid_grant', 'the user no longer exists or is disabled in their directory');
  // The record just re-read (a directory's groups as they are now; a database user's as the token's read found them).
  // Not spent: the token works again if the user is given access back. `invalid_grant` for RFC 6749 clients (forClient).
  if (!(await ctx.access.check(clientApplication(client), user, originOf(req))).allowed) {
    throw oauthError('invalid_refresh_token', 'the user may not use this application');
  }
  const granted = row.scope.split(' ').filter(Boolean);
  return {
    userId: row.userId,
    user,
    scopes: grantableScopes(requestedScopes(p.scope, granted, granted), user),
    from: { refresh: row },
    sessionId: row.sessionId,
    authTime: row.authTime,
    amr: row.amr,
    ...settledResources(row.resource, resources),
  };
};
