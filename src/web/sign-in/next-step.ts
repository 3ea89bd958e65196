import type { Amr } from '../../login/model.ts';
import { needsSecondFactor } from '../../mfa/second-factor.ts';

/**
 * The rules of the browser sign-in (steps.ts), apart from the requests, cookies and pages so they can
 * be read whole and tested alone: given plain facts, which step comes next. In order:
 *
 *  1. no session, or one that must sign in again (`prompt=login`, older than `max_age`) and did not
 *     just sign in for this request: refused with `login_required` under `prompt=none`, else straight
 *     to the upstream the request names (`idp`), else the login page;
 *  2. the application's access policy (docs/access-and-claims.md): a session that holds, however old or
 *     fresh and whatever the prompt, is refused with the 403 page when the policy does not let its user
 *     in; nothing goes back to the application, not even under `prompt=none`;
 *  3. a second factor required and not used by the session (docs/multi-factor-sign-in.md): refused
 *     with `login_required` under `prompt=none`; the code (or passkey) for a user who has a factor;
 *     for one who has none, enrolment, after signing in again when the session proved nothing within
 *     five minutes (docs/decisions.md, "Adding a factor");
 *  4. consent, for a client with `requireConsent` (docs/decisions.md "Consent"): the answer of a posted
 *     consent form; nothing asked when every scope was granted before and `prompt=consent` is not set;
 *     refused with `consent_required` under `prompt=none`; else the consent page;
 *  5. continue.
 *
 * Some facts cost a read or a write (whether the user has a factor, the consents granted; the access
 * decision writes an audit event when it refuses), so the rules ask for them only when they get that far: the answer is then `{ kind: 'ask', fact }`, and the caller adds
 * the fact and asks again.
 */
export interface SignInFacts {
  /** The request's `prompt` values (OIDC Core 3.1.2.1); SAML's IsPassive is `none`, ForceAuthn `login`. */
  prompt: ReadonlySet<string>;
  /** Seconds (OIDC `max_age`): an older session signs in again. */
  maxAge?: number;
  /** Now, in milliseconds. */
  now: number;
  /** The request names (`idp`) an upstream identity provider that is configured here. */
  upstream: boolean;
  /** The browser's SSO session (of a user not disabled); none when not signed in. */
  session?: {
    /** Milliseconds. */
    authTime: number;
    amr: readonly Amr[];
    /** Signed in just now, for this request (fresh.ts): `prompt=login` and `max_age` are answered. */
    fresh: boolean;
    /** A factor proved within five minutes (login/sessions.ts `provedRecently`): may enrol one. */
    provedRecently: boolean;
  };
  /** The flow is for an application whose access policy applies (none at the account page). */
  application: boolean;
  /** The application's access policy lets the session's user in; asked for once a session holds. */
  allowed?: boolean;
  /** This flow needs a second factor (`Flow.needsMfa`: `needsSecondFactor(...).required`). */
  mfaRequired: boolean;
  /** The user has a second factor to give (TOTP or a passkey); asked for only when one is missing. */
  hasFactor?: boolean;
  /** The client asks its users' consent (`requireConsent`). */
  consentRequired: boolean;
  /** The consent form was posted with this request. */
  consentAnswered: boolean;
  /** The scopes this sign-in would grant the client. */
  scopes: readonly string[];
  /** The scopes the user granted this client before; asked for only when consent is in question. */
  granted?: ReadonlySet<string>;
}

/** The steps that ask for the second factor, or for what it needs first. */
export type SecondFactorStep = 'second_factor' | 'sign_in_again' | 'enrol';

/** 1: the browser signs in (first, or again) before anything else. */
export type SignInStep = { kind: 'login' } | { kind: 'upstream' } | { kind: 'refused'; error: 'login_required'; because: 'not_signed_in' };

/** 2–5: the steps of a session that holds; `ask` for a fact the rules need and were not given. */
export type SessionStep =
  | { kind: 'access_denied' }
  | { kind: 'refused'; error: 'login_required'; because: 'second_factor' }
  | { kind: SecondFactorStep }
  | { kind: 'answer_consent' }
  | { kind: 'consent' }
  | { kind: 'refused'; error: 'consent_required' }
  | { kind: 'continue' }
  | { kind: 'ask'; fact: 'allowed' | 'hasFactor' | 'granted' };

export type NextStep = SignInStep | SessionStep;

/** Which step comes next (see `SignInFacts`). */
export const nextStep = (f: SignInFacts): NextStep => signInStep(f) ?? sessionStep(f);

/** 1: how the browser signs in, or `undefined` when its session holds for this request. */
export function signInStep(f: SignInFacts): SignInStep | undefined {
  const s = f.session;
  const tooOld = s !== undefined && f.maxAge !== undefined && f.now - s.authTime > f.maxAge * 1000;
  if (s && (s.fresh || (!f.prompt.has('login') && !tooOld))) return undefined;
  if (f.prompt.has('none')) return { kind: 'refused', error: 'login_required', because: 'not_signed_in' };
  return { kind: f.upstream ? 'upstream' : 'login' };
}

/** 2–5: access, the second factor, consent, continue, for a session that holds (`signInStep` said so). */
export function sessionStep(f: SignInFacts): SessionStep {
  if (f.application) {
    if (f.allowed === undefined) return { kind: 'ask', fact: 'allowed' };
    if (!f.allowed) return { kind: 'access_denied' };
  }
  const passive = f.prompt.has('none');
  if (needsSecondFactor({ required: f.mfaRequired }, null, f.session).missing) {
    if (passive) return { kind: 'refused', error: 'login_required', because: 'second_factor' };
    if (f.hasFactor === undefined) return { kind: 'ask', fact: 'hasFactor' };
    if (f.hasFactor) return { kind: 'second_factor' };
    return { kind: f.session?.provedRecently ? 'enrol' : 'sign_in_again' };
  }

  if (!f.consentRequired) return { kind: 'continue' };
  if (f.consentAnswered) return { kind: 'answer_consent' };
  if (f.granted === undefined) return { kind: 'ask', fact: 'granted' };
  const granted = f.granted;
  if (!f.prompt.has('consent') && f.scopes.every((scope) => granted.has(scope))) return { kind: 'continue' };
  if (passive) return { kind: 'refused', error: 'consent_required' };
  return { kind: 'consent' };
}
