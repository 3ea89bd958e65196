import type { AuditLog } from '../audit/record.ts';
import type { IdentityChain, SignInResult } from '../identity/chain.ts';
import { BackendUnavailableError, type AccountRefusal } from '../identity/contract.ts';
import { NO_BACKEND, type Metrics } from '../metrics/registry.ts';
import { withMfa, type MfaService } from '../mfa/service.ts';
import type { Amr } from './model.ts';
import { accountKey } from '../throttle/account-key.ts';
import { deviceFor, issueDeviceCookie } from '../throttle/device-cookie.ts';
import type { CodeGuesses } from '../throttle/code-guesses.ts';
import type { Lane, LoginThrottle } from '../throttle/login-throttle.ts';
import type { User } from '../users/model.ts';

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
  /** The password grant of a public client (`admin-cli`): counted per account and address, not per client. */
  publicClient?: boolean;
  /** A second factor sent with the password (the password grant's `otp`). */
  otp?: string;
}

export type SignInOutcome =
  /** `passwordExpiresAt`: the directory warns that the password expires soon (docs/identity-backends.md). */
  /** `deviceCookie`: for a browser only; a grant's client keeps no cookie. */
  | { ok: true; user: User; deviceCookie?: string; amr: Amr[]; passwordExpiresAt?: number }
  /** The password was right and the user has a second factor, not given: ask for it (the login page's second step). */
  /** `passwordExpiresAt`: as with `ok`, told after the second factor. */
  | { ok: false; reason: 'second_factor'; user: User; passwordExpiresAt?: number }
  | { ok: false; reason: 'throttled'; retryAfter: number }
  /** Every slot of the account stayed taken by attempts in flight for `throttle.slotWait`: a load refusal, not a delay. */
  | { ok: false; reason: 'busy'; retryAfter: number }
  | { ok: false; reason: 'unavailable' }
  /** `invalid_code`: a wrong second factor (after a right password, or at the second step). */
  /** `user`: with a right password the account's state refuses (the change step of docs/identity-backends.md needs who). */
  | { ok: false; reason: 'invalid_credentials' | AccountRefusal; user?: User }
  /** `codesLocked`: too many wrong codes lately; only a recovery code or a passkey is taken now. */
  | { ok: false; reason: 'invalid_code'; codesLocked?: boolean };

/** The second step of a sign-in: the user is known (a right password, or an SSO session); a code decides. */
export interface SecondStepAttempt {
  user: User;
  code: string;
  /** The factors already used: a password, or a session's. */
  amr: Amr[];
  ip: string;
  clientId: string;
  requestId: string;
  deviceCookie?: string;
}

/** A passkey assertion from the login page: alone (no username typed), after a password, or on a session. */
export interface PasskeyAttempt {
  /** The signed challenge the page was given, and the authenticator's answer (JSON). */
  state?: string;
  response?: string;
  /** The user already known (a password step, or a session), or none for a sign-in by passkey alone. */
  user?: User;
  amr: Amr[];
  ip: string;
  clientId: string;
  requestId: string;
  deviceCookie?: string;
}

type Deps = {
  identity: IdentityChain;
  findUser: (id: string) => Promise<User | undefined>;
  throttle: LoginThrottle;
  codeGuesses: CodeGuesses;
  audit: AuditLog;
  metrics: Pick<Metrics, 'login' | 'mfaGuessing'>;
  mfa: MfaService;
  accountKeyKey: Buffer;
  deviceKey: Buffer;
};

/** Where an attempt comes from: what every event of it records, and the browser's device cookie. */
type Origin = Pick<SignInAttempt, 'ip' | 'clientId' | 'requestId' | 'deviceCookie' | 'grant' | 'publicClient'>;

/** The count an attempt is gated by (login-throttle.ts): its browser's device, or the client of a password grant. */
function laneOf(o: Origin, device: string | undefined): Lane {
  if (o.grant) return o.publicClient ? { kind: 'public' } : { kind: 'confidential', clientId: o.clientId };
  return { kind: 'browser', device };
}

/**
 * Counts one attempt on `username`'s account (the brute-force policy, before anything is checked) and
 * gives the ways it can end, each settling the count, the metrics and the audit trail together. A
 * throttled attempt has ended already: `blocked` is its answer.
 */
async function countAttempt(deps: Deps, username: string, o: Origin, userId?: string) {
  const account = accountKey(deps.accountKeyKey, username);
  const device = deviceFor(deps.deviceKey, o.deviceCookie, account);
  const event = { clientId: o.clientId, ip: o.ip, requestId: o.requestId, ...(userId ? { userId } : {}) };
  const reservation = await deps.throttle.reserve(account, o.ip, laneOf(o, device));
  if (reservation.blocked) {
    const { retryAfter, busy } = reservation;
    deps.metrics.login(NO_BACKEND, busy ? 'unavailable' : 'throttled');
    await deps.audit.record({ kind: 'login.throttled', ...event, details: { retryAfter, ...(busy ? { busy } : {}) } });
    return { blocked: { ok: false, reason: busy ? 'busy' : 'throttled', retryAfter } satisfies SignInOutcome };
  }
  const { release } = reservation;
  return {
    event,
    /** Neither a failure nor a success (an outage, or a second factor still to come): the attempt is given back. */
    inconclusive: () => release.inconclusive(),
    async failed(backend: string, reason: string, failedUserId?: string): Promise<void> {
      deps.metrics.login(backend, 'failure');
      // The count and the event are independent writes: both join the same group commit.
      await Promise.all([
        release.failed(),
        deps.audit.record({ kind: 'login.failure', ...(failedUserId ? { userId: failedUserId } : {}), ...event, details: { reason } }),
      ]);
    },
    async succeeded(user: User, amr: Amr[], details: Record<string, unknown> = {}): Promise<SignInOutcome> {
      deps.metrics.login(user.backend, 'success');
      await Promise.all([
        release.succeeded(),
        deps.audit.record({ kind: 'login.success', userId: user.id, ...event, details: { amr, ...details } }),
      ]);
      // A grant's client would drop the cookie: none is made for it (an HMAC per password grant).
      if (o.grant) return { ok: true, user, amr };
      return { ok: true, user, amr, deviceCookie: device ? o.deviceCookie! : issueDeviceCookie(deps.deviceKey, account) };
    },
  };
}

/**
 * Checks a second-factor code for an attempt already counted, and counts a wrong one against the
 * account's long-window code count too (docs/decisions.md, "Second-factor guessing"). Past that count a TOTP code
 * is not even checked: only a recovery code (or a passkey) is taken, and the attempt is given back.
 */
async function checkCode(deps: Deps, user: User, code: string, attempt: Attempt): Promise<Amr[] | SignInOutcome> {
  const totp = /^\d{6}$/.test(code.trim());
  if (totp && (await deps.codeGuesses.totpLocked(user.id))) {
    await attempt.inconclusive();
    return { ok: false, reason: 'invalid_code', codesLocked: true };
  }
  if (await deps.mfa.verify(user.id, code, attempt.event)) return ['otp'];
  await attempt.failed(user.backend, 'invalid_code', user.id);
  if (await deps.codeGuesses.failed(user.id)) {
    deps.metrics.mfaGuessing();
    await deps.audit.record({ kind: 'mfa.guessing', userId: user.id, ...attempt.event, details: { window: 'codeWindow' } });
  }
  return { ok: false, reason: 'invalid_code' };
}

type Attempt = Exclude<Awaited<ReturnType<typeof countAttempt>>, { blocked: SignInOutcome }>;

/**
 * The one sign-in sequence, for the login page and the password grant alike: count the attempt
 * (brute-force policy, before any password or code is checked), ask the identity chain and then the
 * second factor, settle the count, audit. A right password of a user with a second factor settles
 * nothing until the factor is checked: otherwise each right password would reset the count and let
 * codes be guessed without end. The typed name is never recorded (it may be a password typed into the
 * wrong field); a known account is recorded by its user id.
 */
export const signInService = (deps: Deps) => ({
  async signIn(a: SignInAttempt): Promise<SignInOutcome> {
    const attempt = await countAttempt(deps, a.username, a);
    if (attempt.blocked) return attempt.blocked;
    let result: SignInResult;
    try {
      result = await deps.identity.signIn(a.username, a.password);
    } catch (err) {
      await attempt.inconclusive().catch(() => undefined);
      throw err;
    }
    if (!result.ok) {
      if (result.reason === 'unavailable') {
        deps.metrics.login(result.backends[0] ?? NO_BACKEND, 'unavailable');
        await attempt.inconclusive();
        return { ok: false, reason: 'unavailable' };
      }
      if (result.skipped.length > 0) {
        // A backend was down before this answer: the account may be one of its users, whom an outage
        // never counts against (docs/decisions.md, "A backend in an outage"), whoever answered afterwards.
        deps.metrics.login(result.backend ?? NO_BACKEND, 'failure');
        await attempt.inconclusive();
        await deps.audit.record({
          kind: 'login.failure',
          ...(result.user ? { userId: result.user.id } : {}),
          ...attempt.event,
          details: { reason: result.reason, uncounted: result.skipped },
        });
      } else {
        await attempt.failed(result.backend ?? NO_BACKEND, result.reason, result.user?.id);
      }
      return { ok: false, reason: result.reason, ...(result.user && result.reason !== 'invalid_credentials' ? { user: result.user } : {}) };
    }
    const { user } = result;
    let amr: Amr[] = ['pwd'];
    if (await deps.mfa.hasFactor(user.id)) {
      if (a.otp === undefined) {
        // Not a failure, not a success yet: the attempt is given back and the second step counts its own.
        await attempt.inconclusive();
        return {
          ok: false,
          reason: 'second_factor',
          user,
          ...(result.passwordExpiresAt !== undefined ? { passwordExpiresAt: result.passwordExpiresAt } : {}),
        };
      }
      const checked = await checkCode(deps, user, a.otp, attempt);
      if (!Array.isArray(checked)) return checked;
      amr = withMfa(['pwd', ...checked]);
    }
    const done = await attempt.succeeded(user, amr, a.grant ? { grant: a.grant } : {});
    return done.ok && result.passwordExpiresAt !== undefined ? { ...done, passwordExpiresAt: result.passwordExpiresAt } : done;
  },

  /**
   * A code (TOTP or recovery) for a known user, counted by the same policy as passwords: a wrong code
   * is a failed attempt of the account, a throttled account gets no check at all.
   */
  async secondStep(a: SecondStepAttempt): Promise<SignInOutcome> {
    const attempt = await countAttempt(deps, a.user.username, a, a.user.id);
    if (attempt.blocked) return attempt.blocked;
    const checked = await checkCode(deps, a.user, a.code, attempt);
    if (!Array.isArray(checked)) return checked;
    return attempt.succeeded(a.user, withMfa([...a.amr, ...checked]));
  },

  /**
   * A passkey, counted by the brute-force policy on the account that owns the credential (an unknown
   * credential proves nothing and counts against nobody). A user-verified passkey is two factors in
   * one (RFC 8176 `mfa`).
   */
  async passkeyStep(a: PasskeyAttempt): Promise<SignInOutcome> {
    const ownerId = a.user?.id ?? (await deps.mfa.passkeys.ownerOf(a.response));
    const user = a.user ?? (ownerId ? await deps.findUser(ownerId) : undefined);
    if (!user) return { ok: false, reason: 'invalid_code' };
    if (user.disabled) return { ok: false, reason: 'disabled' };
    const attempt = await countAttempt(deps, user.username, a, user.id);
    if (attempt.blocked) return attempt.blocked;
    const use = await deps.mfa.passkeys.authenticate(a.state, a.response);
    if (!use || use.user !== user.id) {
      await attempt.failed(user.backend, 'invalid_passkey');
      return { ok: false, reason: 'invalid_code' };
    }
    // Alone (no password, no session), the passkey is the whole sign-in: only one that verified the
    // user (PIN, biometrics) is enough; without that it is a second factor only. Not a guess, so
    // not counted as a failure: the right credential, used where it cannot serve.
    if (!a.user && !use.userVerified) {
      await attempt.inconclusive();
      await deps.audit.record({ kind: 'login.failure', ...attempt.event, details: { reason: 'passkey_not_verified' } });
      return { ok: false, reason: 'invalid_code' };
    }
    // A passkey alone never asked the directory: the account must still be there and not disabled
    // (the refresh grant asks the same). A directory that cannot answer is an outage, not a failure.
    let current: User | null;
    try {
      current = await deps.identity.refresh(user);
    } catch (err) {
      await attempt.inconclusive();
      if (err instanceof BackendUnavailableError) return { ok: false, reason: 'unavailable' };
      throw err;
    }
    if (!current) {
      await attempt.inconclusive();
      await deps.audit.record({ kind: 'login.failure', ...attempt.event, details: { reason: 'disabled' } });
      return { ok: false, reason: 'disabled' };
    }
    const amr = withMfa([...a.amr, 'hwk']);
    if (use.userVerified && !amr.includes('mfa')) amr.push('mfa');
    return attempt.succeeded(current, amr);
  },
});

export type SignInService = ReturnType<typeof signInService>;
