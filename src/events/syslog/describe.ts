/**
 * What a SIEM is told about an audit event besides its fields: how severe it is and a few words a
 * person reads in an alert list. docs/audit-to-siem.md "Severity" is the table an operator sees; keep
 * the two together.
 */
import type { OutgoingEvent } from '../model.ts';

/** RFC 5424's severities that audit events use. */
export const SEVERITY = { warning: 4, notice: 5, info: 6 } as const;
export type Severity = (typeof SEVERITY)[keyof typeof SEVERITY];

/**
 * Failures, refusals and the signs of an attack: a SIEM rule that alerts on `warning` and above sees
 * them all. Matched on the kind's last part, so a kind added later (a webhook given up, …) is rated
 * without a change here.
 */
const WARNING = /(^|[._])(failure|failed|refused|denied|throttled|guessing|replayed|reuse_detected|given_up|skipped)$/;

/** Changes to accounts, credentials and configuration: normal, but what an auditor reads. */
const NOTICE = /^(admin\.|user\.|account\.|mfa\.|password_reset\.done$)/;

export function severityOf(kind: string): Severity {
  // A user who declines to share their data has made a choice, not met a failure.
  if (kind === 'consent.denied') return SEVERITY.info;
  if (WARNING.test(kind)) return SEVERITY.warning;
  if (NOTICE.test(kind)) return SEVERITY.notice;
  return SEVERITY.info;
}

/** CEF's 0-10 scale (0-3 low, 4-6 medium): none of Latchkey's events is an incident on its own. */
export const cefSeverity = (s: Severity): number => ({ [SEVERITY.warning]: 6, [SEVERITY.notice]: 4, [SEVERITY.info]: 2 })[s];

const TITLES: Record<string, string> = {
  'login.success': 'Sign-in',
  'login.failure': 'Sign-in failed',
  'login.throttled': 'Sign-in throttled',
  'token.issued': 'Token issued',
  'token.revoked': 'Token revoked',
  'token.reuse_detected': 'Refresh token reused',
  'code.replayed': 'Authorization code replayed',
  'consent.granted': 'Consent granted',
  'consent.denied': 'Consent denied',
  'device.code_refused': 'Device code refused',
  logout: 'Sign-out',
  'admin.change': 'Admin change',
  'mfa.totp_enrolled': 'Authenticator app enrolled',
  'mfa.totp_removed': 'Authenticator app removed',
  'mfa.passkey_added': 'Passkey added',
  'mfa.passkey_removed': 'Passkey removed',
  'mfa.recovery_code_used': 'Recovery code used',
  'mfa.recovery_codes_renewed': 'Recovery codes renewed',
  'mfa.failure': 'Second factor failed',
  'mfa.guessing': 'Second factor guessing',
  'account.password_changed': 'Password changed',
  'account.password_change_refused': 'Password change refused',
  'account.password_change_failed': 'Password change failed',
  'account.signed_out_everywhere': 'Signed out everywhere',
  'logout.backchannel_delivered': 'Back-channel logout delivered',
  'logout.backchannel_failed': 'Back-channel logout failed',
  'password_reset.requested': 'Password reset requested',
  'password_reset.mail_failed': 'Password reset mail failed',
  'password_reset.done': 'Password reset',
  'password_reset.failed': 'Password reset failed',
  'saml.assertion_issued': 'SAML assertion issued',
  'saml.logout': 'SAML logout',
  'access.denied': 'Access denied',
  'user.deprovisioned': 'User deprovisioned',
  'user.reenabled': 'User re-enabled',
  'directory.sync_refused': 'Directory sync refused',
  'directory.sync_failed': 'Directory sync failed',
  'logout.saml_soap_delivered': 'SAML SOAP logout delivered',
  'logout.saml_soap_failed': 'SAML SOAP logout failed',
  'event_sink.skipped': 'Audit events skipped by a sink',
};

/** "Sign-in failed"; a kind without a title yet reads as itself ("webhook given up"). */
export function titleOf(kind: string): string {
  return TITLES[kind] ?? kind.replace(/[._]/g, ' ');
}

/**
 * The one-line text: the title (with an admin change's action) and who, e.g. "Sign-in failed: user 42,
 * client web, from 10.0.0.7" or "Admin change user.update: user 42, from 10.0.0.5".
 */
export function summaryOf(e: Pick<OutgoingEvent, 'kind' | 'userId' | 'clientId' | 'ip' | 'details'>): string {
  const action = typeof e.details?.action === 'string' ? ` ${e.details.action}` : '';
  const parts = [e.userId && `user ${e.userId}`, e.clientId && `client ${e.clientId}`, e.ip && `from ${e.ip}`].filter(Boolean);
  return `${titleOf(e.kind)}${action}${parts.length > 0 ? `: ${parts.join(', ')}` : ''}`;
}
