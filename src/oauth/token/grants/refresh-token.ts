import { oauthError } from '../../errors.ts';
import { param } from '../../params.ts';
import type { Grant } from '../grant.ts';
import { requestedScopes } from '../scopes.ts';

/** Rotation with reuse detection: each refresh token works once; a second use revokes the family. */
export const refreshTokenGrant: Grant = async (ctx, req, p, client) => {
  const token = param(p, 'refresh_token');
  if (!token) throw oauthError('invalid_request', 'refresh_token is required');
  const outcome = await ctx.tokens.rotateRefresh(token, client);
  if (!outcome.ok) {
    if (outcome.reason === 'expired') throw oauthError('refresh_token_exprise', 'the refresh token has expired');
    if (outcome.reason === 'reused') {
      await ctx.audit.record({ kind: 'token.reuse_detected', clientId: client.clientId, ip: req.ip, requestId: req.id });
    }
    throw oauthError('invalid_refresh_token', 'the refresh token is invalid or was already used');
  }
  const { row } = outcome;
  const user = await ctx.userQueries.find(row.userId);
  if (!user || user.disabled) throw oauthError('invalid_grant', 'the user no longer exists or is disabled');
  const granted = row.scope.split(' ').filter(Boolean);
  return {
    userId: row.userId,
    user,
    scopes: requestedScopes(param(p, 'scope'), granted, granted),
    familyId: row.familyId,
    codeHash: row.codeHash ?? undefined,
    sessionId: row.sessionId,
    authTime: row.authTime,
  };
};
