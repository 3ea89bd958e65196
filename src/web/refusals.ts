import { throttled } from '../errors/oauth.ts';
import type { AccountRefusal } from '../identity/contract.ts';
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

/** The words of a form whose CSRF token or pending sign-in is no longer good. */
export const expiredForm = {
  signIn: 'The sign-in form expired. Please try again.',
  signInAgain: 'The sign-in form expired. Please sign in again.',
  other: 'The form expired. Please try again.',
} as const;
