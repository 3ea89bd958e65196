import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createRequire } from 'node:module';
import knexFactory from 'knex';
import type { Logger } from 'pino';
import { migrationSource } from './migrations.ts';
import { openedDatabase, type Database } from './database.ts';
import { pgFast } from './fast-postgres.ts';
import { sqliteFast, type SqliteConnection } from './fast-sqlite.ts';
import { TransactionGate } from './transaction-gate.ts';
import { withSpans } from './traced.ts';

export type { Database } from './database.ts';

/**
 * knex's own messages (one "Acquire connection error" per request while the database is down) go to
 * the structured log at debug: the outage itself is logged once, by DatabaseOutage.
 */
const knexLog = (logger?: Logger) => {
  const debug = (message: unknown) => logger?.debug({ knex: String(message) }, 'knex');
  return { warn: debug, error: debug, deprecate: debug, debug };
};

const require = createRequire(import.meta.url);

/**
 * SQLite: one connection, shared by knex and the fast statements (two connections would make writers
 * wait on each other's file locks while holding the event loop). SQLite serialises writers anyway.
 */
function openSqlite(file: string, logger?: Logger): Database {
  if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
  const BetterSqlite = require('better-sqlite3') as new (file: string) => SqliteConnection;
  const conn = new BetterSqlite(file);
  conn.pragma('journal_mode = WAL');
  conn.pragma('synchronous = NORMAL');
  conn.pragma('foreign_keys = ON');
  conn.pragma('busy_timeout = 5000');
  // 8 MiB of page cache instead of better-sqlite3's 16, which a 30-second load filled and kept: the
  // peak RSS under client_credentials fell from 146 to 136 MiB (docs/performance.md bounds it at 140).
  // The pages left out are in the OS's cache anyway: 0.2 more preads per request.
  conn.pragma('cache_size = -8000');
  const db = knexFactory({
    client: 'better-sqlite3',
    connection: { filename: file },
    useNullAsDefault: true,
    log: knexLog(logger),
    pool: { min: 1, max: 1 },
  });
  // knex's one pooled connection is this one (the pool keeps its minimum of one, so it is let go only
  // at destroy, and then closed).
  const client = db.client as { acquireRawConnection(): Promise<unknown>; destroyRawConnection(c: unknown): Promise<void> };
  client.acquireRawConnection = async () => conn;
  client.destroyRawConnection = async () => conn.close();
  // knex transactions hold the gate; the fast statements wait for it.
  const gate = new TransactionGate();
  return openedDatabase(db, withSpans(db, sqliteFast(conn, gate), 'sqlite'), gate);
}

/** Opens the database named by a `postgres://…` or `sqlite:PATH` URL. */
export function connect(databaseUrl: string, logger?: Logger): Database {
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl.slice('sqlite:'.length) || './data/latchkey.db', logger);
  const db = knexFactory({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: 0, max: 10 },
    log: knexLog(logger),
  });
  return openedDatabase(db, withSpans(db, pgFast(db), 'postgresql'));
}

/** Applies every pending migration (src/db/migrations.ts lists them); the same files serve SQLite and PostgreSQL. */
export async function migrate({ knex }: Database): Promise<string[]> {
  const [, applied] = (await knex.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}
