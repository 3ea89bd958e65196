import { backendUnavailable, oauthError } from '../../errors.ts';
import { param } from '../../params.ts';
import type { Grant } from '../grant.ts';
import { requestedScopes } from '../scopes.ts';

/** The end user's username and password, checked by the identity backend chain (SPEC 4). */
export const passwordGrant: Grant = async (ctx, req, p, client) => {
  const username = param(p, 'username');
  const password = param(p, 'password');
  if (!username) throw oauthError('invalid_request', 'username is required');
  if (!password) throw oauthError('invalid_request', 'password is required');
  const scopes = requestedScopes(param(p, 'scope'), client.scopes, client.scopes);

  const ip = req.ip ?? 'unknown';
  const verdict = await ctx.throttle.check(username, ip);
  if (verdict.blocked) {
    await ctx.audit.record({ kind: 'login.throttled', clientId: client.clientId, ip, requestId: req.id, details: { username } });
    throw oauthError('invalid_grant', `too many failed attempts, retry after ${verdict.retryAfter} s`, 429, {
      'Retry-After': String(verdict.retryAfter),
    });
  }
  const result = await ctx.identity.signIn(username, password);
  if (!result.ok) {
    if (result.reason === 'unavailable') {
      throw backendUnavailable();
    }
    await ctx.throttle.fail(username, ip);
    await ctx.audit.record({ kind: 'login.failure', userId: result.user?.id, clientId: client.clientId, ip, requestId: req.id, details: { username, reason: result.reason } });
    throw oauthError('invalid_grant', result.reason === 'disabled' ? 'the account is disabled' : 'invalid username or password');
  }
  await ctx.throttle.succeed(username, verdict);
  await ctx.audit.record({ kind: 'login.success', userId: result.user.id, clientId: client.clientId, ip, requestId: req.id, details: { grant: 'password' } });
  return { userId: result.user.id, user: result.user, scopes, authTime: Date.now() };
};
