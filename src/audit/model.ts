/**
 * An audit event and the kinds there are.
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

export interface AuditEvent {
  kind: AuditKind;
  userId?: string | null;
  clientId?: string | null;
  actorUserId?: string | null;
  actorClientId?: string | null;
  ip?: string | null;
  requestId?: string | null;
  details?: Record<string, unknown>;
}

export type AuditKind =
  | 'login.success'
  | 'login.failure'
  | 'login.throttled'
  | 'token.issued'
  | 'token.revoked'
  | 'token.reuse_detected'
  | 'code.replayed'
  | 'consent.granted'
  | 'consent.denied'
  | 'device.code_refused'
  | 'logout'
  | 'admin.change'
  | 'mfa.totp_enrolled'
  | 'mfa.totp_removed'
  | 'mfa.passkey_added'
  | 'mfa.passkey_removed'
  | 'mfa.recovery_code_used'
  | 'mfa.recovery_codes_renewed'
  | 'mfa.failure'
  | 'mfa.guessing'
  | 'account.password_changed'
  /** docs/identity-backends.md: the directory's policy refused a new password, or the directory failed during the write. */
  | 'account.password_change_refused'
  | 'account.password_change_failed'
  | 'account.signed_out_everywhere'
  | 'logout.backchannel_delivered'
  | 'logout.backchannel_failed'
  | 'password_reset.requested'
  | 'password_reset.mail_failed'
  | 'password_reset.done'
  | 'password_reset.failed'
  /** docs/saml-applications.md: a SAML assertion sent to a service provider, and a SAML single logout. */
  | 'saml.assertion_issued'
  | 'saml.logout'
  /** docs/access-and-claims.md: an application's access policy refused a user (details: application, kind, reason). */
  | 'access.denied'
  /**
   * docs/directory-sync.md: a leaver deprovisioned (details: backend, reason) or back; a sync
   * refused because it would deprovision too many, or failed; a SAML SP told of a logout by SOAP.
   */
  | 'user.deprovisioned'
  | 'user.reenabled'
  | 'directory.sync_refused'
  | 'directory.sync_failed'
  | 'logout.saml_soap_delivered'
  | 'logout.saml_soap_failed'
  /** docs/webhooks.md: events an endpoint failed for the whole retry window (details: webhookId, events, firstEventId, lastEventId, error). */
  | 'webhook.given_up'
  /**
   * docs/decisions.md "Events out": a sink (`syslog`, …) fell more than `audit.sinkMaxBacklog` behind and
   * its oldest events were skipped, undelivered (details: sink, events, firstEventId, lastEventId).
   */
  | 'event_sink.skipped'
  /**
   * docs/identity-backends.md "Desktop single sign-on": a Negotiate (Kerberos) token refused (details: reason, one of
   * src/kerberos/model.ts's, and the principal, backend and account refusal when known).
   */
  | 'login.kerberos_refused';

/**
 * Where an act came from, as its audit event names it: the request's address and id. A handler
 * passes it with the act; the service that finishes the act writes the event (docs/development.md,
 * "Services own the rules and the audit trail").
 */
export interface Origin {
  ip?: string;
  requestId?: string;
}
