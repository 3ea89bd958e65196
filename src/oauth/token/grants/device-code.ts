import { oauthError } from '../../../errors/oauth.ts';
import type { Grant } from '../grant.ts';
import { grantableScopes } from '../../../clients/scopes.ts';
import { clientApplication } from '../../../access/service.ts';
import { originOf } from '../../../http/origin.ts';

/** RFC 8628 §3.5: what a poll that gets no tokens is told, by the state of its request. */
const NOT_YET = {
  invalid: ['invalid_grant', 'the device code is invalid or was already used'],
  other_client: ['invalid_grant', 'the device code was issued to another client'],
  expired: ['expired_token', 'the device code has expired; start again'],
  denied: ['access_denied', 'the user denied the request'],
  pending: ['authorization_pending', 'the user has not approved the request yet'],
  slow_down: ['slow_down', 'polling too fast: wait 5 seconds longer between requests'],
} as const;

/**
 * RFC 8628 §3.4-3.5: the device polls with its device code until the user decided at /device. The
 * approved request is taken by one atomic update (device-codes.ts), so the tokens go out once.
 */
export const deviceCodeGrant: Grant = async (ctx, req, p, client) => {
  const deviceCode = p.device_code;
  if (!deviceCode) throw oauthError('invalid_request', 'device_code is required');
  const poll = await ctx.deviceCodes.poll(deviceCode, client.clientId);
  if (poll.state !== 'approved') {
    const [code, description] = NOT_YET[poll.state];
    throw oauthError(code, description);
  }
  const { row } = poll;
  // docs/decisions.md: sessions end with the credentials; an approval given in a session ended since gets nothing.
  if (row.sessionId && !(await ctx.sessions.live(row.sessionId)))
    throw oauthError('invalid_grant', 'the sign-in that approved this request has ended');
  const user = row.userId ? await ctx.users.find(row.userId) : undefined;
  if (!user || user.disabled) throw oauthError('invalid_grant', 'the user is disabled or no longer exists');
  // docs/access-and-claims.md: approved, then taken out of the application's policy before the poll; the
  // poll has used the code up.
  const access = await ctx.access.check(clientApplication(client), user, originOf(req));
  if (!access.allowed) throw oauthError('invalid_grant', 'the user may not use this application');
  return {
    userId: user.id,
    user,
    scopes: grantableScopes(row.scope.split(' ').filter(Boolean), user),
    sessionId: row.sessionId,
    authTime: row.authTime,
    amr: poll.amr,
  };
};
