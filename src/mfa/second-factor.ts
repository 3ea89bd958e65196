import type { Amr } from '../login/model.ts';

/** The answer of the second-factor rule (docs/multi-factor-sign-in.md). */
export interface SecondFactorNeed {
  /** A second factor is required: the server's `mfa.required`, or the client's `requireMfa`. */
  required: boolean;
  /** Required, and the sign-in so far has not used one (its `amr` lacks `mfa`; none known counts as none used). */
  missing: boolean;
}

/**
 * The one second-factor rule (docs/multi-factor-sign-in.md), pure: whether a second factor is
 * required, for this server (`config.mfa`), client (`requireMfa`; none for the account page or a SAML
 * service provider) and sign-in (a session, a password grant's outcome, a refresh token's `amr`), and
 * whether it is still missing. Without a sign-in, a required factor is missing.
 */
export function needsSecondFactor(
  policy: { readonly required: boolean },
  client?: { readonly requireMfa: boolean } | null,
  signIn?: { readonly amr: readonly Amr[] | null } | null,
): SecondFactorNeed {
  const required = policy.required || !!client?.requireMfa;
  return { required, missing: required && !signIn?.amr?.includes('mfa') };
}
