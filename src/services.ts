import type { Logger } from 'pino';
import { accessService } from './access/service.ts';
import { accessPreviews } from './access/preview.ts';
import { myApps } from './access/my-apps.ts';
import { auditQueries } from './audit/queries.ts';
import { auditLog, type AuditLog } from './audit/record.ts';
import { tokenIssueAudit } from './audit/token-issues.ts';
import { clientQueries } from './clients/queries.ts';
import { GRANT_TYPES } from './clients/model.ts';
import { remoteKeySets } from './clients/remote-keys.ts';
import { clientService, type ClientService } from './clients/service.ts';
import type { Config } from './config/schema.ts';
import { localBackendId, type AppContext } from './context.ts';
import { deriveKey, DEVELOPMENT_SECRET } from './crypto/secrets.ts';
import type { Database } from './db/database.ts';
import { DatabaseOutage } from './db/outage.ts';
import { ping, probeWrite } from './db/ping.ts';
import type { Transaction } from './db/transaction.ts';
import { IdentityChain } from './identity/chain.ts';
import { directorySync } from './directory-sync/service.ts';
import { syncQueries } from './directory-sync/sync-queries.ts';
import { loadBackend } from './identity/loader.ts';
import { kerberosSignIns } from './kerberos/service.ts';
import { loadUpstreams } from './identity/upstreams/registry.ts';
import { roundTripQueries } from './identity/upstreams/round-trip-queries.ts';
import { upstreamRoundTrips } from './identity/upstreams/round-trips.ts';
import { upstreamSignIns } from './identity/upstreams/sign-in.ts';
import { keyQueries } from './keys/key-queries.ts';
import { loadSigningKeys, type PendingKeyPairs, type SigningKeys } from './keys/signing-keys.ts';
import { signInService } from './login/sign-in.ts';
import { deviceCodes } from './tokens/device-codes.ts';
import { deviceQueries } from './tokens/device-queries.ts';
import { createMetrics } from './metrics/registry.ts';
import { purgeQueries } from './retention/purge-queries.ts';
import { PURGED_TABLES } from './retention/model.ts';
import { retention } from './retention/purge.ts';
import { codeGuesses } from './throttle/code-guesses.ts';
import { upstreamStarts } from './throttle/upstream-starts.ts';
import { loginThrottle } from './throttle/login-throttle.ts';
import { throttleQueries } from './throttle/throttle-queries.ts';
import { passkeyOptionLimit } from './throttle/passkey-options.ts';
import { JWT_ACCESS_TOKEN_MAX_TTL } from './tokens/jwt-access-token.ts';
import { consentQueries } from './login/consent-queries.ts';
import { consentStore, type ConsentStore } from './login/consents.ts';
import { sessionQueries } from './login/session-queries.ts';
import { sessionStore, type SessionStore } from './login/sessions.ts';
import { backchannelQueries } from './login/backchannel-queries.ts';
import { logoutNotices, type LogoutNoticeWorker } from './login/logout-notices.ts';
import { mfaQueries } from './mfa/mfa-queries.ts';
import { addressRules, type AddressRules } from './outbound/address-rules.ts';
import { mfaService, type MfaService } from './mfa/service.ts';
import { tokenQueries } from './tokens/queries.ts';
import { tokenService, type TokenService } from './tokens/service.ts';
import { userQueries } from './users/queries.ts';
import { adminRoleQueries } from './admin-roles/roles-queries.ts';
import { adminRoleService, type AdminRoleService } from './admin-roles/service.ts';
import { userService, type DirectoryPasswords, type UserService } from './users/service.ts';
import { smtpMailer } from './password-reset/mailer.ts';
import { resetQueries } from './password-reset/reset-queries.ts';
import { passwordResetService } from './password-reset/service.ts';
import { samlQueries } from './saml/saml-queries.ts';
import { serviceProviders, type ServiceProviders } from './saml/service-providers.ts';
import { samlKeys } from './saml/idp-keys.ts';
import { samlIdp } from './saml/idp.ts';
import { scimBackends, upstreamLinks, type ScimBackend } from './scim/backends.ts';
import { scimTokenQueries } from './scim/token-queries.ts';
import { scimTokens } from './scim/tokens.ts';
import { scimQueries } from './scim/scim-queries.ts';
import { scimService } from './scim/service.ts';
import { samlLogoutQueries } from './saml/soap-logout-queries.ts';
import { outboxQueries } from './events/outbox-queries.ts';
import { eventOutbox } from './events/outbox.ts';
import { webhookQueries } from './webhooks/webhook-queries.ts';
import { webhookService } from './webhooks/service.ts';
import { webhookWorker } from './webhooks/worker.ts';
import { syslogSinkFor } from './events/syslog/sink.ts';
import { soapLogouts, type SoapLogoutWorker } from './saml/soap-logout.ts';

/** The keys derived from LATCHKEY_SECRET that the services use. */
export interface ServiceSecrets {
  totp: Buffer;
  recoveryCodes: Buffer;
  webauthnChallenges: Buffer;
  /** Seals the secrets of client_secret_jwt clients (their HS256 keys). */
  clientSecrets: Buffer;
}

/** What the services need that outlives a transaction: settings, the log, the loaded signing keys. */
export interface ServiceDeps {
  config: Config;
  logger: Logger;
  keys: SigningKeys;
  dbOutage: DatabaseOutage;
  /** The id of the built-in database backend, where created users live. */
  localBackend: string;
  secrets: ServiceSecrets;
  /** Back-channel or SAML SOAP logout notices were queued (and committed): wakes this process's delivery workers. */
  logoutQueued?: () => void;
  /** The identity chain's password writes: `setPassword` of a directory user (docs/identity-backends.md). */
  directory?: DirectoryPasswords;
  /** Addresses never called (docs/decisions.md "Outbound fetches"): registered URLs are checked against them. */
  outbound: AddressRules;
  /** The `plugin: scim` backends (docs/scim-provisioning.md), checked at start: their users' password hashes are Latchkey's. */
  scim?: readonly ScimBackend[];
}

const queriesFor = (database: Database) => ({
  clients: clientQueries(database),
  users: userQueries(database),
  tokens: tokenQueries(database),
  audit: auditQueries(database),
  sessions: sessionQueries(database),
  consents: consentQueries(database),
  mfa: mfaQueries(database),
  keys: keyQueries(database),
  backchannel: backchannelQueries(database),
  saml: samlQueries(database),
  /** SAML logout by SOAP: queued with a session's end (docs/saml-applications.md "Single logout by SOAP"). */
  samlLogouts: samlLogoutQueries(database),
  /** RFC 8628 device authorization requests: a user's decision commits with its audit event. */
  devices: deviceQueries(database),
  /** Reset links: the admin's remedies end them in their own transactions (docs/decisions.md). */
  resets: resetQueries(database),
  /** SCIM clients' secret tokens (docs/scim-provisioning.md "Tokens"): made and revoked with their audit events. */
  scimTokens: scimTokenQueries(database),
  /** The SCIM view of users (`users.scim`), SCIM groups and their members (docs/scim-provisioning.md "What the endpoint supports"). */
  scim: scimQueries(database),
  /** Custom admin roles (docs/admin-api.md "Roles and permissions"): made, changed and deleted with their audit events. */
  adminRoles: adminRoleQueries(database),
  /** The sinks' cursors over the audit trail (docs/decisions.md "Events out"): moved with what a sink records of its deliveries. */
  events: outboxQueries(database),
  /** Webhooks (docs/webhooks.md): registered with their place in the queue, and the record of their deliveries. */
  webhooks: webhookQueries(database),
});

export type Queries = ReturnType<typeof queriesFor>;

/** The services (the rules) over the queries (the SQL), bound to one database handle or transaction. */
export interface Services {
  /** For services working inside a transaction; routes and resolvers never see these. */
  queries: Queries;
  audit: AuditLog;
  tokens: TokenService;
  clients: ClientService;
  users: UserService;
  sessions: SessionStore;
  consents: ConsentStore;
  mfa: MfaService;
  /** SAML service providers (docs/saml-applications.md), the sibling of `clients`. */
  samlProviders: ServiceProviders;
  /** Admin roles and a caller's grant (docs/admin-api.md "Roles and permissions"). */
  adminRoles: AdminRoleService;
  transaction: Transaction<Services>;
}

/**
 * The services that hold no state of their own, bound to `database`: the request path gets them on
 * the database, and a transaction gets the very same services on its connection.
 */
export function createServices(database: Database, deps: ServiceDeps, inside = false, afterCommit?: Array<() => void>): Services {
  const queries = queriesFor(database);
  // What waits for the commit (waking the logout worker) runs once the outermost transaction committed.
  const transaction: Transaction<Services> = async (work) => {
    const after = afterCommit ?? [];
    const result = await database.transaction((trx) => work(createServices(trx, deps, true, after)));
    if (!afterCommit) for (const f of after.splice(0)) f();
    return result;
  };
  const logoutQueued = () => (inside ? afterCommit?.push(() => deps.logoutQueued?.()) : deps.logoutQueued?.());
  // Inside a transaction an audit event commits with its change, or fails it.
  const audit = auditLog(queries.audit, deps.logger, deps.dbOutage, inside);
  const notices = { queries: queries.backchannel, saml: queries.samlLogouts, queued: () => void logoutQueued() };
  const sessions = sessionStore(
    queries.sessions,
    deps.config.session.ttl,
    queries.tokens,
    audit,
    notices,
    inside ? undefined : transaction,
  );
  return {
    queries,
    audit,
    tokens: tokenService(queries.tokens, deps.config, deps.keys, { transaction }),
    clients: clientService(queries.clients, { transaction, secretKey: deps.secrets.clientSecrets, outbound: deps.outbound }),
    users: userService(queries.users, {
      transaction,
      localBackend: deps.localBackend,
      directory: deps.directory,
      upstreams: deps.config.identity.upstreams.map((u) => u.id),
      localPasswords: deps.scim?.map((b) => b.id),
      audit,
      logger: deps.logger,
    }),
    sessions,
    consents: consentStore(queries.consents, audit, inside ? undefined : transaction),
    mfa: mfaService(queries.mfa, {
      secretKey: deps.secrets.totp,
      codeKey: deps.secrets.recoveryCodes,
      sealKey: deps.secrets.webauthnChallenges,
      audit,
      issuer: new URL(deps.config.publicUrl).host,
      publicUrl: deps.config.publicUrl,
      sessions,
      transaction,
    }),
    samlProviders: serviceProviders(queries.saml, { transaction, outbound: deps.outbound }),
    adminRoles: adminRoleService(queries.adminRoles, { transaction }),
    transaction,
  };
}

/**
 * The one composition root: builds every service once, at start. The process-wide ones (the signing
 * keys, the identity chain, the throttle, retention, the token audit tallies) hold state, so they are
 * built here once; the rest are `createServices` on the database, whose `transaction` rebuilds them
 * on a transaction's connection.
 */
export async function createContext(
  config: Config,
  database: Database,
  logger: Logger,
  options: { firstKeys?: PendingKeyPairs } = {},
): Promise<AppContext> {
  const secret = config.secret ?? DEVELOPMENT_SECRET;
  if (!config.secret) {
    logger.warn(
      'LATCHKEY_SECRET is not set: signing keys are encrypted and forms protected with a built-in development secret. Set LATCHKEY_SECRET (32+ random characters, the same on every process) in production.',
    );
  }
  const dbOutage = new DatabaseOutage(database, logger, () => probeWrite(database.knex));
  // Services and keys need each other: the token service signs with the keys, and a rotation (never
  // during the load) is a transaction of the services'.
  let services: Services | undefined;
  const keys = await loadSigningKeys(
    keyQueries(database),
    deriveKey(secret, 'signing-keys'),
    {
      publishDelayMs: config.keys.publishDelay * 1000,
      // Everything a retired key signed has expired by then (JWT access tokens live at most a day).
      keepRetiredMs: Math.max(config.tokens.idTokenTtl, config.tokens.accessTokenTtl, JWT_ACCESS_TOKEN_MAX_TTL) * 1000,
    },
    (work) => services!.transaction(work),
    options.firstKeys,
  );
  const secrets = {
    totp: deriveKey(secret, 'totp-secrets'),
    recoveryCodes: deriveKey(secret, 'recovery-codes'),
    webauthnChallenges: deriveKey(secret, 'webauthn-challenges'),
    clientSecrets: deriveKey(secret, 'client-secrets'),
    samlPairwise: deriveKey(secret, 'saml-pairwise'),
  };
  // Checked before any backend loads: a SCIM backend's links and invitations need the rest of the config.
  const scim = scimBackends(config);
  // The chain comes first: a directory user's new password (setPassword) is written through it.
  const members = [];
  const localRecords = userQueries(database);
  for (const entry of config.identity.backends) {
    const localUsers = { find: (username: string) => localRecords.findByUsername(entry.id, username), ping: localRecords.ping };
    members.push({ id: entry.id, plugin: entry.plugin, backend: await loadBackend(entry, { db: database, localUsers, logger }) });
  }
  const resets = resetQueries(database);
  const identity = new IdentityChain(members, localRecords, logger, {
    emailChanged: resets.discardAllOf,
    upstreams: config.identity.upstreams.map((u) => u.id),
  });
  let notices: LogoutNoticeWorker | undefined;
  let soap: SoapLogoutWorker | undefined;
  // Every call out (client keys, back-channel logout, upstreams) and every registered URL obeys these.
  const outbound = addressRules(config.outbound.denyNetworks);
  services = createServices(database, {
    config,
    logger,
    keys,
    dbOutage,
    localBackend: localBackendId(config),
    secrets,
    logoutQueued: () => {
      notices?.kick();
      soap?.kick();
    },
    directory: identity,
    outbound,
    scim,
  });
  const { clients, users, tokens, sessions, consents, audit, mfa, samlProviders } = services;
  notices = logoutNotices({ queries: services.queries.backchannel, findClient: clients.find, keys, config, audit, logger, outbound });
  const samlKeyring = samlKeys(keys, config.publicUrl);
  const saml = samlIdp({
    providers: samlProviders,
    queries: services.queries.saml,
    keys: samlKeyring,
    publicUrl: config.publicUrl,
    pairwiseKey: secrets.samlPairwise,
    transaction: services.transaction,
  });
  soap = soapLogouts({
    queries: services.queries.samlLogouts,
    findSp: samlProviders.findById,
    keys: samlKeyring,
    issuer: saml.issuer,
    config,
    audit,
    logger,
    outbound,
  });
  // Validated now (a bad entry stops the start); nothing is fetched until an upstream is first used.
  const upstreams = loadUpstreams(config.identity.upstreams, config.publicUrl, logger, outbound);
  const deviceKey = deriveKey(secret, 'device-cookie');
  const throttle = throttleQueries(database);
  const attempts = loginThrottle(throttle, config.throttle);
  const metrics = createMetrics({
    // An upstream reports once it was used: `unknown` (not reached since the start) is no state to alert on.
    backendStates: async () => ({
      ...(await identity.health()),
      ...Object.fromEntries(
        upstreams.list.filter((u) => u.state() !== 'unknown').map((u) => [u.id, u.state() === 'up' ? ('up' as const) : ('down' as const)]),
      ),
    }),
    known: { backends: [...members.map((m) => m.id), ...upstreams.list.map((u) => u.id)], grants: GRANT_TYPES, tables: PURGED_TABLES },
    directorySyncs: () => syncs.states(),
    // docs/operating-latchkey.md "Metrics": how far behind each webhook and the syslog sink are.
    eventSinks: () => events.lags(),
  });
  // Directory sync (docs/directory-sync.md): leavers go through the user service, like an admin's acts.
  const syncs = directorySync({
    backends: members.map((m) => ({ id: m.id, sync: m.backend.sync })),
    queries: syncQueries(database),
    transaction: (work) => database.transaction((trx) => work(syncQueries(trx))),
    users,
    audit,
    metrics,
    logger,
    upstreams: config.identity.upstreams.map((u) => u.id),
  });
  const signIn = signInService({
    identity,
    findUser: users.find,
    throttle: attempts,
    codeGuesses: codeGuesses(throttle, config.throttle),
    audit,
    metrics,
    mfa,
    accountKeyKey: deriveKey(secret, 'throttle-account'),
    deviceKey,
  });
  // docs/identity-backends.md "Desktop single sign-on": off, and the GSSAPI binding never loaded, unless a backend has `kerberos`.
  const kerberos = await kerberosSignIns({ identity, audit, metrics, logger, publicUrl: config.publicUrl });
  const { smtp } = config;
  const passwordReset = passwordResetService({
    queries: services.queries.resets,
    throttle,
    users,
    identity,
    mfa,
    signIn,
    audit,
    factorKey: deriveKey(secret, 'password-reset-factor'),
    // The config refuses to start with resets on and no mail server, and so does a SCIM backend that
    // invites (src/scim/backends.ts): the mailer is there when needed.
    mailer:
      (config.passwordReset.enabled || scim.some((b) => b.invite)) && smtp.url && smtp.from ? smtpMailer(smtp.url, smtp.from) : undefined,
    invites: (backend) => scim.some((b) => b.id === backend && b.invite),
    config,
    logger,
  });
  const events = eventOutbox(services.queries.events, { transaction: services.transaction, config: config.audit, logger });
  // Webhooks (docs/webhooks.md): their secrets sealed like client secrets, under a key of their own.
  const webhookKey = deriveKey(secret, 'webhook-secrets');
  const webhooks = webhookService(services.queries.webhooks, {
    outbox: events,
    transaction: services.transaction,
    secretKey: webhookKey,
    outbound,
  });
  return {
    config,
    logger,
    clients,
    clientKeys: remoteKeySets(outbound),
    users,
    tokens,
    sessions,
    consents,
    audit,
    tokenAudit: tokenIssueAudit(services.queries.audit, logger, dbOutage, config.audit),
    identity,
    directorySync: syncs,
    deviceCodes: deviceCodes(services.queries.devices, config, attempts.guesses, {
      findClient: clients.find,
      audit,
      transaction: services.transaction,
    }),
    signIn,
    kerberos,
    passwordReset,
    scim: scimService(config, {
      transaction: services.transaction,
      queries: services.queries.scim,
      upstreams: config.identity.upstreams.map((u) => u.id),
      invites: (backend) => scim.some((b) => b.id === backend && b.invite),
      invite: async (user, origin) => passwordReset.invite(user, origin),
      logger,
    }),
    scimTokens: scimTokens(services.queries.scimTokens, {
      backends: scim.map((b) => b.id),
      transaction: services.transaction,
      logger,
    }),
    upstreams: {
      ...upstreams,
      trips: upstreamRoundTrips(roundTripQueries(database), deriveKey(secret, 'upstream-sign-ins')),
      signIns: upstreamSignIns({
        identity,
        audit,
        metrics,
        guesses: attempts.guesses,
        starts: upstreamStarts(throttle, config.throttle),
        logger,
        linked: upstreamLinks(scim, localRecords, services.queries.scim),
      }),
    },
    keys,
    ping: () => ping(database.knex),
    csrfKey: deriveKey(secret, 'csrf'),
    deviceKey,
    dbOutage,
    metrics,
    retention: retention(purgeQueries(database), config, metrics, logger, database.checkpoints),
    mfa,
    passkeyOptionLimit: passkeyOptionLimit(throttle, config.throttle),
    logoutNotices: notices,
    samlProviders,
    adminRoles: services.adminRoles,
    myApps: myApps({ clients: clients.list, serviceProviders: samlProviders.list, publicUrl: config.publicUrl }),
    access: accessService({ audit, metrics }),
    // One pairwise key: the preview shows the persistent NameIDs the IdP issues.
    preview: accessPreviews({ clients, samlProviders, users, pairwiseKey: secrets.samlPairwise }),
    saml,
    samlLogouts: soap,
    events,
    syslog: syslogSinkFor(config, events, logger),
    webhooks,
    webhookDeliveries: webhookWorker({
      outbox: events,
      queries: services.queries.webhooks,
      transaction: services.transaction,
      secretKey: webhookKey,
      config,
      logger,
      outbound,
    }),
  };
}
