import type { Logger } from 'pino';
import { auditLog, type AuditLog } from './audit/record.ts';
import { clientQueries } from './clients/queries.ts';
import { clientService, type ClientService } from './clients/service.ts';
import type { Config } from './config/schema.ts';
import { deriveKey, DEVELOPMENT_SECRET } from './crypto/secrets.ts';
import type { Db } from './db/connect.ts';
import { DatabaseOutage } from './db/outage.ts';
import { IdentityChain } from './identity/chain.ts';
import { loadBackend } from './identity/loader.ts';
import { loadSigningKeys, type SigningKeys } from './keys/signing-keys.ts';
import { JWT_ACCESS_TOKEN_MAX_TTL } from './tokens/jwt-access-token.ts';
import { consentStore, type ConsentStore } from './login/consents.ts';
import { sessionStore, type SessionStore } from './login/sessions.ts';
import { signInService, type SignInService } from './login/sign-in.ts';
import { loginThrottle } from './throttle/login-throttle.ts';
import { tokenQueries } from './tokens/queries.ts';
import { tokenService, type TokenService } from './tokens/service.ts';
import { userQueries, type UserQueries } from './users/queries.ts';
import { userService, type UserService } from './users/service.ts';

/** Everything a route or resolver needs, wired once at start (Logto's `{ queries, libraries }`). */
export interface AppContext {
  config: Config;
  logger: Logger;
  db: Db;
  clients: ClientService;
  users: UserService;
  userQueries: UserQueries;
  tokens: TokenService;
  sessions: SessionStore;
  consents: ConsentStore;
  identity: IdentityChain;
  /** The sign-in sequence (brute-force policy, identity chain, audit) of the login page and the password grant. */
  signIn: SignInService;
  audit: AuditLog;
  keys: SigningKeys;
  /** Keys the CSRF tokens of the HTML forms. */
  csrfKey: Buffer;
  /** Signs the device cookies of the brute-force policy. */
  deviceKey: Buffer;
  /** Notes database outages: one log line per outage, not one per request. */
  dbOutage: DatabaseOutage;
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
  const users = userQueries(db);
  const members = [];
  for (const entry of config.identity.backends) {
    members.push({ id: entry.id, plugin: entry.plugin, backend: await loadBackend(entry, { db, logger }) });
  }
  const localBackend = localBackendId(config);
  const identity = new IdentityChain(members, users, logger);
  const dbOutage = new DatabaseOutage(db, logger);
  const audit = auditLog(db, logger, dbOutage);
  const deviceKey = deriveKey(secret, 'device-cookie');
  const keys = await loadSigningKeys(db, deriveKey(secret, 'signing-keys'), {
    publishDelayMs: config.keys.publishDelay * 1000,
    // Everything a retired key signed has expired by then (JWT access tokens live at most a day).
    keepRetiredMs: Math.max(config.tokens.idTokenTtl, config.tokens.accessTokenTtl, JWT_ACCESS_TOKEN_MAX_TTL) * 1000,
  });
  return {
    config,
    logger,
    db,
    clients: clientService(clientQueries(db)),
    users: userService(users, localBackend),
    userQueries: users,
    tokens: tokenService(tokenQueries(db), config, keys),
    sessions: sessionStore(db, config.session.ttl),
    consents: consentStore(db),
    identity,
    signIn: signInService({ identity, throttle: loginThrottle(db, config.throttle), audit, accountKeyKey: deriveKey(secret, 'throttle-account'), deviceKey }),
    audit,
    keys,
    csrfKey: deriveKey(secret, 'csrf'),
    deviceKey,
    dbOutage,
  };
}
