/**
 * The tables whose expired rows retention deletes.
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

/** Each table the purge keeps small, with the primary key a batch is chosen by. */
export const PURGED_TABLES = [
  'auth_codes',
  'access_tokens',
  'refresh_tokens',
  'sso_sessions',
  'login_throttle',
  'audit_events',
  'webauthn_challenges',
  'pending_sign_ins',
  'client_assertion_jtis',
  'device_codes',
  'password_reset_tokens',
  'upstream_sign_ins',
  'saml_request_ids',
  'saml_session_participants',
  'webhook_deliveries',
] as const;

export type PurgedTable = (typeof PURGED_TABLES)[number];
