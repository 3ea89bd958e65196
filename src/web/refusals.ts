import { accountBusy, throttled } from '../errors/oauth.ts';
import type { AccountRefusal } from '../identity/contract.ts';
import type { KerberosRefusal } from '../kerberos/model.ts';
import type { SignInOutcome } from '../login/sign-in.ts';

/** What a page says for a refused sign-in step: its status, its words, and how long a throttled browser waits. */
export interface Refusal {
  status: number;
  message: string;
  /** Seconds, sent as `Retry-After` (docs/decisions.md: the login page shows the token endpoint's words). */
  retryAfter?: number;
}

/** The login page's words for a right password that the account's state refuses. */
const accountRefusals: Record<AccountRefusal, string> = {
  disabled: 'This account is disabled.',
  account_expired: 'This account has expired.',
  password_expired: 'Your password has expired. Change it, then sign in again.',
  password_must_change: 'Your password must be changed before you can sign in.',
};

/** The words for a wrong answer, by what was asked. */
export const wrongAnswer = {
  password: 'Invalid username or password.',
  code: 'That code is not right. Try the current one, or a recovery code.',
  passkey: 'The passkey was not accepted.',
  /** Asked again before a change at the account page (docs/multi-factor-sign-in.md). */
  proofCode: 'That code is not right.',
  proofPassword: 'That password is not right.',
} as const;

export type Asked = keyof typeof wrongAnswer;

/**
 * The one mapping from a refused sign-in outcome to a page's status and words. Only the password step
 * tells the account's state (a right password was given); any other step's refusal is a wrong answer.
 */
export function refusalOf(outcome: Extract<SignInOutcome, { ok: false }>, asked: Asked): Refusal {
  switch (outcome.reason) {
    case 'throttled':
      // docs/decisions.md: the login page shows the token endpoint's very words.
      return { status: 429, message: throttled(outcome.retryAfter).message, retryAfter: outcome.retryAfter };
    case 'busy':
      return { status: 503, message: accountBusy(outcome.retryAfter).message, retryAfter: outcome.retryAfter };
    case 'unavailable':
      return { status: 503, message: 'The directory is unreachable right now. Please try again shortly.' };
    case 'invalid_credentials':
    case 'invalid_code':
    case 'second_factor':
      return { status: 401, message: wrongAnswer[asked] };
    default:
      return { status: 401, message: asked === 'password' ? accountRefusals[outcome.reason] : wrongAnswer[asked] };
  }
}

/** What the login page says after a refused Kerberos ticket, the form below it (docs/identity-backends.md "Desktop single sign-on"). */
const kerberosWords: Record<Exclude<KerberosRefusal, 'account_refused'>, string> = {
  ntlm: 'Your computer offered Windows (NTLM) sign-in, which this server does not take. Sign in with your password.',
  wrong_service: "Your computer's Kerberos ticket is not for this site. Sign in with your password.",
  wrong_realm: "Your computer's Kerberos ticket is from another domain. Sign in with your password.",
  expired: "Your computer's Kerberos ticket has expired. Sign in with your password, or sign in to your computer again.",
  replay: 'That single sign-on attempt was used already. Sign in with your password, or reload the page.',
  clock_skew: "Your computer's clock is more than five minutes off. Correct it, or sign in with your password.",
  unknown_principal: 'Your Windows account is not known here. Sign in with your password.',
  invalid_token: 'Single sign-on did not work. Sign in with your password.',
};

/**
 * A refused Kerberos ticket's status and words: the login page without a new challenge (a browser
 * would only send the same ticket again), so the user can sign in with a password.
 */
export function kerberosRefusalOf(outcome: { reason: KerberosRefusal | 'unavailable'; refusal?: AccountRefusal }): Refusal {
  if (outcome.reason === 'unavailable') return refusalOf({ ok: false, reason: 'unavailable' }, 'password');
  if (outcome.reason === 'account_refused') return { status: 401, message: accountRefusals[outcome.refusal ?? 'disabled'] };
  return { status: 401, message: kerberosWords[outcome.reason] };
}

/** The words of a form whose CSRF token or pending sign-in is no longer good. */
export const expiredForm = {
  signIn: 'The sign-in form expired. Please try again.',
  signInAgain: 'The sign-in form expired. Please sign in again.',
  other: 'The form expired. Please try again.',
} as const;
