import type { Logger } from 'pino';
import { auditQueries } from './audit/queries.ts';
import { auditLog, type AuditLog } from './audit/record.ts';
import { clientQueries } from './clients/queries.ts';
import { clientService, type ClientService } from './clients/service.ts';
import type { Config } from './config/schema.ts';
import type { Db } from './db/connect.ts';
import type { DatabaseOutage } from './db/outage.ts';
import { inTransaction } from './db/transaction.ts';
import type { SigningKeys } from './keys/signing-keys.ts';
import { consentQueries } from './login/consent-queries.ts';
import { consentStore, type ConsentStore } from './login/consents.ts';
import { sessionQueries } from './login/session-queries.ts';
import { sessionStore, type SessionStore } from './login/sessions.ts';
import { tokenQueries } from './tokens/queries.ts';
import { tokenService, type TokenService } from './tokens/service.ts';
import { userQueries } from './users/queries.ts';
import { userService, type UserService } from './users/service.ts';

/** What the services need that outlives a transaction: settings, the log, the loaded signing keys. */
export interface ServiceDeps {
  config: Config;
  logger: Logger;
  keys: SigningKeys;
  dbOutage: DatabaseOutage;
  /** The id of the built-in database backend, where created users live. */
  localBackend: string;
}

const queriesOn = (db: Db) => ({
  clients: clientQueries(db),
  users: userQueries(db),
  tokens: tokenQueries(db),
  audit: auditQueries(db),
  sessions: sessionQueries(db),
  consents: consentQueries(db),
});

export type Queries = ReturnType<typeof queriesOn>;

/** Runs `work` with the services bound to one transaction: it commits whole or not at all. */
export type Transaction = <T>(work: (tx: Services) => Promise<T>) => Promise<T>;

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
  transaction: Transaction;
}

/**
 * The one composition root of the layers: the request path gets the services on the database, and a
 * transaction gets the very same services on its connection.
 */
export function createServices(db: Db, deps: ServiceDeps, inside = false): Services {
  const queries = queriesOn(db);
  const transaction: Transaction = (work) => inTransaction(db, (trx) => work(createServices(trx, deps, true)));
  return {
    queries,
    // Inside a transaction an audit event commits with its change, or fails it.
    audit: auditLog(queries.audit, deps.logger, deps.dbOutage, inside),
    tokens: tokenService(queries.tokens, deps.config, deps.keys, { transaction }),
    clients: clientService(queries.clients, { transaction }),
    users: userService(queries.users, { transaction, localBackend: deps.localBackend }),
    sessions: sessionStore(queries.sessions, deps.config.session.ttl, queries.tokens),
    consents: consentStore(queries.consents),
    transaction,
  };
}
