import { clientApplication } from '../../../access/service.ts';
import { accountBusy, backendUnavailable, oauthError, throttled } from '../../../errors/oauth.ts';
import { originOf } from '../../../http/origin.ts';
import { joinResources } from '../../../clients/resource.ts';
import { resourcesParam } from '../../resources-param.ts';
import type { Grant } from '../grant.ts';
import { clientScopes, grantableScopes } from '../../../clients/scopes.ts';
import { clock } from '../../../clock.ts';
import { needsSecondFactor } from '../../../mfa/second-factor.ts';
import type { AccountRefusal } from '../../../identity/contract.ts';

/** A right password that the account's state refuses: `invalid_grant`, saying why. */
const refused: Record<AccountRefusal, string> = {
  disabled: 'the account is disabled',
  account_expired: 'the account has expired',
  password_expired: 'the password has expired; change it, then sign in again',
  password_must_change: 'the password must be changed before signing in',
};

/**
 * The end user's username and password, checked by the identity backend chain (docs/identity-backends.md), and the
 * second factor in `otp` for a user who has one (docs/multi-factor-sign-in.md); then the client's access
 * policy (docs/access-and-claims.md), before a second factor still to enrol is asked for.
 */
export const passwordGrant: Grant = async (ctx, req, p, client) => {
  const username = p.username;
  const password = p.password;
  if (!username) throw oauthError('invalid_request', 'username is required');
  if (!password) throw oauthError('invalid_request', 'password is required');
  const resources = resourcesParam(p);
  const scopes = clientScopes(p.scope, client);

  const otp = p.otp || undefined;
  const outcome = await ctx.signIn.signIn({
    username,
    password,
    otp,
    ip: req.ip ?? 'unknown',
    clientId: client.clientId,
    requestId: req.id,
    grant: 'password',
    publicClient: !client.confidential,
  });
  if (!outcome.ok) {
    switch (outcome.reason) {
      case 'throttled':
        throw throttled(outcome.retryAfter);
      case 'busy':
        throw accountBusy(outcome.retryAfter);
      case 'unavailable':
        throw backendUnavailable();
      case 'invalid_credentials':
        throw oauthError('invalid_grant', 'invalid username or password');
      case 'second_factor':
        throw oauthError('mfa_required', 'this account signs in with a second factor: send a one-time or recovery code in otp');
      case 'invalid_code':
        throw oauthError(
          'invalid_grant',
          outcome.codesLocked ? 'too many wrong one-time codes lately: send a recovery code in otp' : 'invalid one-time code',
        );
      default:
        throw oauthError('invalid_grant', refused[outcome.reason]);
    }
  }
  // docs/access-and-claims.md: a user the client's access policy refuses gets `invalid_grant` in both styles (audited and counted).
  if (!(await ctx.access.check(clientApplication(client), outcome.user, originOf(req))).allowed) {
    throw oauthError('invalid_grant', 'the user may not use this application');
  }
  // A client or server that needs a second factor, and a user who has none yet: enrolment is a page.
  if (needsSecondFactor(ctx.config.mfa, client, outcome).missing) {
    throw oauthError(
      'mfa_required',
      `a second factor is required: enrol one at ${ctx.config.publicUrl}/account, then send its code in otp`,
    );
  }
  return {
    userId: outcome.user.id,
    user: outcome.user,
    scopes: grantableScopes(scopes, outcome.user),
    authTime: clock.now(),
    amr: outcome.amr,
    resource: resources ? joinResources(resources) : null,
  };
};
