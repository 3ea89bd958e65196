import { REFUSAL_WORDS, type PasswordRefusal, type PasswordWrite } from '../../src/identity/plugin-kit.ts';
import type { PolicyError } from './password-policy.ts';

export const refused = (refusal: PasswordRefusal, message: string): PasswordWrite => ({ ok: false, refusal, message });

/** A refusal in the shared words (src/users/password-refusals.ts), so every page says it alike. */
const inWords = (refusal: PasswordRefusal): PasswordWrite => refused(refusal, REFUSAL_WORDS[refusal]);

export const WRONG_PASSWORD = inWords('wrong_password');

/** OpenLDAP ppolicy's errors on a Password Modify, as the user is told them. */
const POLICY_REFUSALS: Partial<Record<PolicyError, PasswordWrite>> = {
  passwordTooShort: inWords('too_short'),
  insufficientPasswordQuality: inWords('complexity'),
  passwordInHistory: inWords('in_history'),
  passwordTooYoung: inWords('too_young'),
  passwordModNotAllowed: refused('refused', 'The directory does not let you change your password.'),
  mustSupplyOldPassword: WRONG_PASSWORD,
};

/**
 * The answer to a refused Password Modify: ppolicy's error when the control said one, else the LDAP
 * result (53 "unwilling to verify old password" is slapd's answer to a wrong old password).
 */
export function openLdapRefusal(error: PolicyError | undefined, err: { code: number; message: string }): PasswordWrite {
  const byPolicy = error && POLICY_REFUSALS[error];
  if (byPolicy) return byPolicy;
  if (err.code === 49 || /old password/i.test(err.message)) return WRONG_PASSWORD;
  if (err.code === 19) return refused('complexity', 'The new password does not meet the directory’s password rules.');
  return inWords('refused');
}

/**
 * Active Directory's refusal of a `unicodePwd` write. Windows says only `0000052D` (constraint
 * violation) for length, complexity, history and minimum age alike; Samba adds which one in words,
 * which is read when present. A wrong old password is `00000056` / `0000056B` (or result 49).
 */
export function adRefusal(err: { code: number; message: string }): PasswordWrite {
  const m = err.message;
  if (err.code === 49 || /\b0000056B?\b|doesn't match|wrong password/i.test(m)) return WRONG_PASSWORD;
  if (/too short/i.test(m)) return POLICY_REFUSALS.passwordTooShort!;
  if (/history|already used/i.test(m)) return POLICY_REFUSALS.passwordInHistory!;
  if (/too young|minimum password age|min(imum)?[ -]age/i.test(m)) return POLICY_REFUSALS.passwordTooYoung!;
  if (/complexity/i.test(m)) return POLICY_REFUSALS.insufficientPasswordQuality!;
  if (/0000052D/i.test(m)) {
    return refused(
      'complexity',
      'The new password does not meet the password rules (length, complexity, history or how recently it was changed).',
    );
  }
  if (err.code === 50) return refused('refused', 'The directory does not let this account change its password.');
  return inWords('refused');
}
