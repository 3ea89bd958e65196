import type { Logger } from 'pino';
import { auditQueries } from './audit/queries.ts';
import { auditLog, type AuditLog } from './audit/record.ts';
import { tokenIssueAudit, type TokenIssueAudit } from './audit/token-issues.ts';
import { GRANT_TYPES } from './clients/queries.ts';
import type { ClientService } from './clients/service.ts';
import type { Config } from './config/schema.ts';
import { deriveKey, DEVELOPMENT_SECRET } from './crypto/secrets.ts';
import type { Db } from './db/connect.ts';
import { DatabaseOutage } from './db/outage.ts';
import { ping, probeWrite } from './db/ping.ts';
import { IdentityChain } from './identity/chain.ts';
import { loadBackend } from './identity/loader.ts';
import { keyQueries } from './keys/key-queries.ts';
import { loadSigningKeys, type SigningKeys } from './keys/signing-keys.ts';
import type { ConsentStore } from './login/consents.ts';
import type { SessionStore } from './login/sessions.ts';
import { signInService, type SignInService } from './login/sign-in.ts';
import { createServices } from './services.ts';
import { throttleQueries } from './throttle/throttle-queries.ts';
import { loginThrottle } from './throttle/login-throttle.ts';
import { codeGuesses } from './throttle/code-guesses.ts';
import { createMetrics, type Metrics } from './metrics/registry.ts';
import { mfaQueries } from './mfa/mfa-queries.ts';
import { mfaService, type MfaService } from './mfa/service.ts';
import { PURGED_TABLES, purgeQueries } from './retention/purge-queries.ts';
import { retention, type Retention } from './retention/purge.ts';
import { JWT_ACCESS_TOKEN_MAX_TTL } from './tokens/jwt-access-token.ts';
import type { TokenService } from './tokens/service.ts';
import type { UserService } from './users/service.ts';

/**
 * What a route or resolver gets, wired once at start: services only (Logto's `{ queries, libraries }`
 * with the queries kept behind the services). No route sees the database handle or a query.
 */
export interface AppContext {
  config: Config;
  logger: Logger;
  clients: ClientService;
  users: UserService;
  tokens: TokenService;
  sessions: SessionStore;
  consents: ConsentStore;
  audit: AuditLog;
  /** `token.issued` events: client_credentials ones summed per client and minute (SPEC 7 "Audit volume"). */
  tokenAudit: TokenIssueAudit;
  identity: IdentityChain;
  /** The sign-in sequence (brute-force policy, identity chain, audit) of the login page and the password grant. */
  signIn: SignInService;
  keys: SigningKeys;
  /** Whether the database answers (`/readyz`). */
  ping(): Promise<void>;
  /** Keys the CSRF tokens of the HTML forms. */
  csrfKey: Buffer;
  /** Signs the device cookies of the brute-force policy. */
  deviceKey: Buffer;
  /** Notes database outages: one log line per outage, not one per request. */
  dbOutage: DatabaseOutage;
  /** What `/metrics` shows (SPEC 6). */
  metrics: Metrics;
  /** Deletes expired rows (SPEC 6); scheduled by the server, run once by `latchkey purge`. */
  retention: Retention;
  /** Second factors: TOTP and recovery codes (SPEC 8). */
  mfa: MfaService;
}

/** The id of the built-in database backend, where created users and the first admin live. */
export const localBackendId = (config: Config): string =>
  config.identity.backends.find((b) => b.plugin === 'database')?.id ?? 'local';

export async function createContext(config: Config, db: Db, logger: Logger): Promise<AppContext> {
  const secret = config.secret ?? DEVELOPMENT_SECRET;
  if (!config.secret) {
    logger.warn(
      'LATCHKEY_SECRET is not set: signing keys are encrypted and forms protected with a built-in development secret. Set LATCHKEY_SECRET (32+ random characters, the same on every process) in production.',
    );
  }
  const dbOutage = new DatabaseOutage(db, logger, () => probeWrite(db));
  const keys = await loadSigningKeys(
    keyQueries(db),
    deriveKey(secret, 'signing-keys'),
    {
      publishDelayMs: config.keys.publishDelay * 1000,
      // Everything a retired key signed has expired by then (JWT access tokens live at most a day).
      keepRetiredMs: Math.max(config.tokens.idTokenTtl, config.tokens.accessTokenTtl, JWT_ACCESS_TOKEN_MAX_TTL) * 1000,
    },
    auditLog(auditQueries(db), logger, dbOutage),
  );
  const services = createServices(db, { config, logger, keys, dbOutage, localBackend: localBackendId(config) });

  const members = [];
  for (const entry of config.identity.backends) {
    members.push({ id: entry.id, plugin: entry.plugin, backend: await loadBackend(entry, { db, logger }) });
  }
  const identity = new IdentityChain(members, services.queries.users, logger);
  const deviceKey = deriveKey(secret, 'device-cookie');
  const mfa = mfaService(mfaQueries(db), {
    secretKey: deriveKey(secret, 'totp-secrets'),
    codeKey: deriveKey(secret, 'recovery-codes'),
    sealKey: deriveKey(secret, 'webauthn-challenges'),
    audit: services.audit,
    issuer: new URL(config.publicUrl).host,
    publicUrl: config.publicUrl,
    sessions: services.sessions,
  });
  const { clients, users, tokens, sessions, consents, audit } = services;
  const throttle = throttleQueries(db);
  const metrics = createMetrics({
    backendStates: () => identity.health(),
    known: { backends: members.map((m) => m.id), grants: GRANT_TYPES, tables: PURGED_TABLES },
  });
  return {
    config,
    logger,
    clients,
    users,
    tokens,
    sessions,
    consents,
    audit,
    tokenAudit: tokenIssueAudit(auditQueries(db), audit, logger, dbOutage, config.audit),
    identity,
    signIn: signInService({
      identity,
      findUser: users.find,
      throttle: loginThrottle(throttle, config.throttle),
      codeGuesses: codeGuesses(throttle, config.throttle),
      audit,
      metrics,
      mfa,
      accountKeyKey: deriveKey(secret, 'throttle-account'),
      deviceKey,
    }),
    keys,
    ping: () => ping(db),
    csrfKey: deriveKey(secret, 'csrf'),
    deviceKey,
    dbOutage,
    metrics,
    retention: retention(purgeQueries(db), config, metrics, logger),
    mfa,
  };
}
