import type { AuditLog } from '../audit/record.ts';
import type { IdentityChain } from '../identity/chain.ts';
import { NO_BACKEND, type Metrics } from '../metrics/registry.ts';
import { accountKey } from '../throttle/account-key.ts';
import { deviceFor, issueDeviceCookie } from '../throttle/device-cookie.ts';
import type { LoginThrottle } from '../throttle/login-throttle.ts';
import type { User } from '../users/queries.ts';

export interface SignInAttempt {
  username: string;
  password: string;
  ip: string;
  clientId: string;
  requestId: string;
  /** The browser's `lk_device` cookie, when the attempt comes from the login page. */
  deviceCookie?: string;
  /** Recorded with the success event: `password` for the password grant. */
  grant?: string;
}

export type SignInOutcome =
  | { ok: true; user: User; deviceCookie: string }
  | { ok: false; reason: 'throttled'; retryAfter: number }
  | { ok: false; reason: 'unavailable' }
  | { ok: false; reason: 'invalid_credentials' | 'disabled' };

/**
 * The one sign-in sequence, for the login page and the password grant alike: count the attempt
 * (brute-force policy, before any password is checked), ask the identity chain, settle the count,
 * audit. The typed name is never recorded: it may be a password typed into the wrong field; a known
 * account is recorded by its user id.
 */
export const signInService = (deps: {
  identity: IdentityChain;
  throttle: LoginThrottle;
  audit: AuditLog;
  metrics: Pick<Metrics, 'login'>;
  accountKeyKey: Buffer;
  deviceKey: Buffer;
}) => ({
  async signIn(a: SignInAttempt): Promise<SignInOutcome> {
    const account = accountKey(deps.accountKeyKey, a.username);
    const device = deviceFor(deps.deviceKey, a.deviceCookie, account);
    const event = { clientId: a.clientId, ip: a.ip, requestId: a.requestId };
    const reservation = await deps.throttle.reserve(account, a.ip, device);
    if (reservation.blocked) {
      deps.metrics.login(NO_BACKEND, 'throttled');
      await deps.audit.record({ kind: 'login.throttled', ...event, details: { retryAfter: reservation.retryAfter } });
      return { ok: false, reason: 'throttled', retryAfter: reservation.retryAfter };
    }
    const { release } = reservation;
    let result;
    try {
      result = await deps.identity.signIn(a.username, a.password);
    } catch (err) {
      await release.refund().catch(() => undefined);
      throw err;
    }
    if (!result.ok) {
      if (result.reason === 'unavailable') {
        deps.metrics.login(result.backends[0] ?? NO_BACKEND, 'unavailable');
        await release.refund();
        return { ok: false, reason: 'unavailable' };
      }
      deps.metrics.login(result.backend ?? NO_BACKEND, 'failure');
      await release.failed();
      await deps.audit.record({ kind: 'login.failure', userId: result.user?.id, ...event, details: { reason: result.reason } });
      return { ok: false, reason: result.reason };
    }
    deps.metrics.login(result.user.backend, 'success');
    await release.succeeded();
    await deps.audit.record({ kind: 'login.success', userId: result.user.id, ...event, ...(a.grant ? { details: { grant: a.grant } } : {}) });
    return { ok: true, user: result.user, deviceCookie: device ? a.deviceCookie! : issueDeviceCookie(deps.deviceKey, account) };
  },
});

export type SignInService = ReturnType<typeof signInService>;
