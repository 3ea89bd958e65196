import type { Logger } from 'pino';
import type { AccessService } from './access/service.ts';
import type { AccessPreviews } from './access/preview.ts';
import type { MyApps } from './access/my-apps.ts';
import type { AuditLog } from './audit/record.ts';
import type { TokenIssueAudit } from './audit/token-issues.ts';
import type { RemoteKeySets } from './clients/remote-keys.ts';
import type { ClientService } from './clients/service.ts';
import type { Config } from './config/schema.ts';
import type { DatabaseOutage } from './db/outage.ts';
import type { DirectorySync } from './directory-sync/service.ts';
import type { IdentityChain } from './identity/chain.ts';
import type { Upstreams } from './identity/upstreams/registry.ts';
import type { UpstreamRoundTrips } from './identity/upstreams/round-trips.ts';
import type { UpstreamSignIns } from './identity/upstreams/sign-in.ts';
import type { SigningKeys } from './keys/signing-keys.ts';
import type { ConsentStore } from './login/consents.ts';
import type { SessionStore } from './login/sessions.ts';
import type { LogoutNoticeWorker } from './login/logout-notices.ts';
import type { SignInService } from './login/sign-in.ts';
import type { KerberosSignIns } from './kerberos/service.ts';
import type { Metrics } from './metrics/registry.ts';
import type { MfaService } from './mfa/service.ts';
import type { PasswordResetService } from './password-reset/service.ts';
import type { Retention } from './retention/purge.ts';
import type { TokenService } from './tokens/service.ts';
import type { DeviceCodes } from './tokens/device-codes.ts';
import type { UserService } from './users/service.ts';
import type { PasskeyOptionLimit } from './throttle/passkey-options.ts';
import type { ServiceProviders } from './saml/service-providers.ts';
import type { SamlIdp } from './saml/idp.ts';
import type { ScimTokens } from './scim/tokens.ts';
import type { ScimService } from './scim/service.ts';
import type { SoapLogoutWorker } from './saml/soap-logout.ts';
import type { EventOutbox } from './events/outbox.ts';
import type { DeliveryWorker } from './outbound/delivery-loop.ts';
import type { WebhookService } from './webhooks/service.ts';
import type { SyslogSink } from './events/syslog/sink.ts';
import type { AdminRoleService } from './admin-roles/service.ts';

/**
 * What a route or resolver gets, wired once at start by the one composition root (`createContext`,
 * src/services.ts): the services plus config, logger and metrics (Logto's `{ queries, libraries }`
 * with the queries kept behind the services). No route sees the database handle or a query.
 */
export interface AppContext {
  config: Config;
  logger: Logger;
  clients: ClientService;
  /** The keys of clients registered with a `jwksUri`, fetched under docs/decisions.md's outbound rules. */
  clientKeys: RemoteKeySets;
  users: UserService;
  tokens: TokenService;
  sessions: SessionStore;
  consents: ConsentStore;
  audit: AuditLog;
  /** `token.issued` events: client_credentials ones summed per client and minute (docs/decisions.md "Audit volume"). */
  tokenAudit: TokenIssueAudit;
  identity: IdentityChain;
  /** Directory sync (docs/directory-sync.md): passes on each backend's interval, scheduled by the server; run now by `syncBackend` and `latchkey sync`. */
  directorySync: DirectorySync;
  /**
   * Upstream identity providers (docs/upstream-identity-providers.md): the configured ones, the round trips away at them, and
   * Latchkey's policy on the users they sign in.
   */
  upstreams: Upstreams & { trips: UpstreamRoundTrips; signIns: UpstreamSignIns };
  /** The sign-in sequence (brute-force policy, identity chain, audit) of the login page and the password grant. */
  signIn: SignInService;
  /** Desktop single sign-on: a browser's Kerberos ticket (docs/identity-backends.md "Desktop single sign-on"); off without a backend's `kerberos`. */
  kerberos: KerberosSignIns;
  /** RFC 8628 device authorization requests (docs/connect-an-application.md). */
  deviceCodes: DeviceCodes;
  keys: SigningKeys;
  /** Whether the database answers (`/readyz`). */
  ping(): Promise<void>;
  /** Keys the CSRF tokens of the HTML forms. */
  csrfKey: Buffer;
  /** Signs the device cookies of the brute-force policy. */
  deviceKey: Buffer;
  /** Notes database outages: one log line per outage, not one per request. */
  dbOutage: DatabaseOutage;
  /** What `/metrics` shows (docs/operating-latchkey.md). */
  metrics: Metrics;
  /** Deletes expired rows (docs/operating-latchkey.md); scheduled by the server, run once by `latchkey purge`. */
  retention: Retention;
  /** Second factors: TOTP and recovery codes (docs/multi-factor-sign-in.md). */
  mfa: MfaService;
  /** WebAuthn options handed out per address (`POST /passkey/options` stores a challenge each time). */
  passkeyOptionLimit: PasskeyOptionLimit;
  /** Back-channel logout delivery (docs/connect-an-application.md); started and stopped with the server. */
  logoutNotices: LogoutNoticeWorker;
  /** "Forgot your password?": reset links by mail (docs/identity-backends.md). */
  passwordReset: PasswordResetService;
  /** SCIM clients' secret tokens (docs/scim-provisioning.md "Tokens"): listed, made and revoked by admins, checked per request. */
  scimTokens: ScimTokens;
  /** The SCIM 2.0 service provider's Users, Groups and discovery resources (docs/scim-provisioning.md "What the endpoint supports"). */
  scim: ScimService;
  /** SAML service providers (docs/saml-applications.md): registered, changed and deleted through the admin API. */
  samlProviders: ServiceProviders;
  /** The SAML 2.0 identity provider's rules, for the /saml/v20 endpoints. */
  saml: SamlIdp;
  /** SAML logout by SOAP delivery (docs/saml-applications.md "Single logout by SOAP"); started and stopped with the server. */
  samlLogouts: SoapLogoutWorker;
  /** "My applications" (docs/access-and-claims.md): the applications a user may use and start from here. */
  myApps: MyApps;
  /** Who may use which application (docs/access-and-claims.md): checked, refusals audited and counted. */
  access: AccessService;
  /** What an application would be told about a user (docs/access-and-claims.md): the admin's preview. */
  preview: AccessPreviews;
  /** The durable queue of audit events going out (docs/decisions.md "Events out"): the webhooks' and the syslog sink's cursors. */
  events: EventOutbox;
  /** Webhooks (docs/webhooks.md): registered, changed and deleted through the admin API, their deliveries listed. */
  webhooks: WebhookService;
  /** Webhook delivery (docs/webhooks.md "Retries and order"); started and stopped with the server. */
  webhookDeliveries: DeliveryWorker;
  /** The audit trail to the SIEM over syslog (docs/audit-to-siem.md), from `events`; started and stopped with the server. */
  syslog: SyslogSink;
  /** Admin roles (docs/admin-api.md "Roles and permissions"): built-in and custom, and what an admin API caller holds. */
  adminRoles: AdminRoleService;
}

/** The id of the built-in database backend, where created users and the first admin live. */
export const localBackendId = (config: Config): string => config.identity.backends.find((b) => b.plugin === 'database')?.id ?? 'local';
