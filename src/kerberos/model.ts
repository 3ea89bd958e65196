/**
 * Desktop single sign-on with Kerberos (docs/identity-backends.md "Desktop single sign-on"): why a
 * Negotiate token was refused. A model module: types and their constants, no SQL.
 */

/**
 * The fixed reasons of a refused Negotiate sign-in: the `reason` of its `login.kerberos_refused` audit
 * event and of `latchkey_kerberos_refused_total`.
 */
export const KERBEROS_REFUSALS = [
  /** NTLM inside Negotiate (the browser had no ticket): never accepted, Kerberos only. */
  'ntlm',
  /** A ticket for another service principal, or one the keytab holds no key for. */
  'wrong_service',
  /** A ticket issued in another realm, or a user of another realm than the backend's. */
  'wrong_realm',
  /** The ticket has expired. */
  'expired',
  /** The authenticator was seen before (the replay cache). */
  'replay',
  /** The client's clock is more than five minutes off the server's. */
  'clock_skew',
  /** The directory holds no user of that principal. */
  'unknown_principal',
  /** The directory refuses the account (disabled, locked out, expired) or an administrator disabled it here. */
  'account_refused',
  /** Not a Kerberos token this server can read (malformed, or a mechanism other than Kerberos). */
  'invalid_token',
] as const;

export type KerberosRefusal = (typeof KERBEROS_REFUSALS)[number];
