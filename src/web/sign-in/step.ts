import type { Application } from '../../access/service.ts';
import type { AppContext } from '../../context.ts';
import type { User } from '../../users/model.ts';
import type { SignedIn } from '../current-session.ts';
import type { Refusal } from '../refusals.ts';

/** What the browser sign-in is for: the authorize request's client, or the account page (no client). */
export interface Flow {
  /** '' at the account page. */
  clientId: string;
  /**
   * The application the sign-in is for, whose access policy the session must pass before anything
   * else is asked or sent (docs/access-and-claims.md); none at the account page.
   */
  application?: Application;
  /** The client's `requireMfa`, or `mfa.required` (docs/multi-factor-sign-in.md): `needsSecondFactor(...).required` (mfa/second-factor.ts). */
  needsMfa: boolean;
  prompt: Set<string>;
  /** Seconds: an older session signs in again (OIDC `max_age`). */
  maxAge?: number;
  /** The authorize request's `idp`: sign in at that upstream straight away, without the login page (docs/upstream-identity-providers.md). */
  idp?: string;
  /** The original request as a URL of this server, continued after a sign-in at an upstream. */
  resume: string;
  /**
   * The client's `kerberos` (docs/identity-backends.md "Desktop single sign-on"): false shows only the login form,
   * without the Negotiate challenge. Left out (the account page, a SAML service provider): offered.
   */
  kerberos?: boolean;
  requireConsent: boolean;
  /** The scopes this user may be granted (the admin scope only to an admin, docs/admin-api.md). */
  scopesFor(user: User): string[];
}

/**
 * What to show next. The steps never write a page themselves: they set cookies at most (the session,
 * the device, the pending sign-in) and answer with a step; the route shows it (show.ts) or, for
 * `continue`, goes on with the request, and for `refused` sends the error back to the client.
 */
export type Step =
  /** `negotiate`: the first showing, to a browser without a session: `401` and `WWW-Authenticate: Negotiate` (kerberos.ts). */
  | { show: 'login'; status: number; error?: string; username?: string; retryAfter?: number; negotiate?: boolean }
  /** The directory asks for a new password after a right one (docs/identity-backends.md); `pending` holds the old one, sealed. */
  | { show: 'change_password'; status: number; notice: string; error?: string; username: string; pending: string }
  /** Signed in; the password expires soon (docs/identity-backends.md): change it now (`mayChange`: the user's backend lets them), or continue. */
  | { show: 'password_expiring'; status: 200; expiresAt: number; mayChange: boolean }
  /** The code (or passkey) after a password (`pending`), or on a session that needs more. */
  | { show: 'second_factor'; status: number; user: User; passkey: boolean; pending?: string; error?: string; retryAfter?: number }
  | { show: 'enrol'; status: number; enrolment: { secret: string; uri: string }; error?: string }
  | { show: 'recovery_codes'; codes: string[] }
  | { show: 'consent'; status: number; user: User; scopes: string[]; error?: string }
  /** Away to an upstream identity provider (docs/upstream-identity-providers.md), or back from one to the original request. */
  | { show: 'redirect'; location: string }
  /** An upstream's sign-in failed: 503 when it was unreachable, 400 otherwise, 429 while throttled. */
  | { show: 'upstream_error'; status: number; upstream: string; message: string; retryAfter?: number }
  /** The application's access policy refuses the signed-in user (docs/access-and-claims.md): a 403 page, nothing sent to the application. */
  | { show: 'access_denied'; status: 403; application: string; username: string }
  | { show: 'refused'; error: 'login_required' | 'consent_required' | 'access_denied'; description: string }
  | { show: 'continue'; signedIn: SignedIn; scopes: string[] };

/** A step the route shows as a page. */
export type PageStep = Exclude<Step, { show: 'continue' } | { show: 'refused' }>;

/** The answer to a sign-in form that worked: the session, and whether it started just now. */
export interface SignedInNow {
  signedIn: SignedIn;
  fresh: boolean;
}

/** The second step's page: a code, or a passkey when the user has one. */
export async function askForCode(ctx: AppContext, user: User, o: { pending?: string; refusal?: Refusal } = {}): Promise<PageStep> {
  return {
    show: 'second_factor',
    status: o.refusal?.status ?? 200,
    user,
    passkey: await ctx.mfa.offersPasskey(user.id),
    pending: o.pending,
    error: o.refusal?.message,
    retryAfter: o.refusal?.retryAfter,
  };
}
