import { backendUnavailable, oauthError, throttled } from '../../errors.ts';
import { param } from '../../params.ts';
import type { Grant } from '../grant.ts';
import { grantableScopes, requestedScopes } from '../scopes.ts';
import { clock } from '../../../clock.ts';

/** The end user's username and password, checked by the identity backend chain (SPEC 4). */
export const passwordGrant: Grant = async (ctx, req, p, client) => {
  const username = param(p, 'username');
  const password = param(p, 'password');
  if (!username) throw oauthError('invalid_request', 'username is required');
  if (!password) throw oauthError('invalid_request', 'password is required');
  const scopes = requestedScopes(param(p, 'scope'), client.scopes, client.scopes);

  const outcome = await ctx.signIn.signIn({ username, password, ip: req.ip ?? 'unknown', clientId: client.clientId, requestId: req.id, grant: 'password' });
  if (!outcome.ok) {
    switch (outcome.reason) {
      case 'throttled':
        throw throttled(outcome.retryAfter);
      case 'unavailable':
        throw backendUnavailable();
      case 'disabled':
        throw oauthError('invalid_grant', 'the account is disabled');
      default:
        throw oauthError('invalid_grant', 'invalid username or password');
    }
  }
  return { userId: outcome.user.id, user: outcome.user, scopes: grantableScopes(scopes, outcome.user), authTime: clock.now() };
};
