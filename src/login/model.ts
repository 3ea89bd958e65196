/**
 * An SSO session, the factors it was signed in with, and a queued back-channel logout notice.
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

/**
 * RFC 8176; `fed`: signed in through an upstream identity provider (docs/upstream-identity-providers.md);
 * `wia`: Windows integrated authentication, a Kerberos ticket (docs/identity-backends.md "Desktop single sign-on").
 */
export type Amr = 'pwd' | 'otp' | 'hwk' | 'mfa' | 'fed' | 'wia';

export interface SsoSession {
  /** The stored id: a hash of the cookie value, so a database read gives no usable cookie. */
  id: string;
  userId: string;
  authTime: number;
  /** The factors the sign-in used (RFC 8176); sessions from before they were kept used a password. */
  amr: Amr[];
  /** When the user last proved a factor again in this session; null: not since `authTime`. */
  provedAt: number | null;
  expiresAt: number;
}

/** A logout notice waiting in the queue (Back-Channel Logout 1.0). */
export interface QueuedLogout {
  id: string;
  clientId: string;
  userId: string;
  /** The session's `sid` as its id_tokens carried it. */
  sid: string;
  /** Deliveries tried so far. */
  attempts: number;
}
