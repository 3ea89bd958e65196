import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createRequire } from 'node:module';
import knexFactory from 'knex';
import type { Logger } from 'pino';
import { startCheckpointer } from './checkpointer.ts';
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
function openSqlite(file: string, options: ConnectOptions): Database {
  const { logger } = options;
  if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
  const BetterSqlite = require('better-sqlite3') as new (file: string) => SqliteConnection;
  const conn = new BetterSqlite(file);
  conn.pragma('journal_mode = WAL');
  conn.pragma('synchronous = NORMAL');
  conn.pragma('foreign_keys = ON');
  conn.pragma('busy_timeout = 5000');
  // 4 MiB of page cache instead of better-sqlite3's 16, which a 30-second load filled and kept: at 8
  // the peak RSS under client_credentials fell from 146 to 136 MiB, and 4 pays for most of the
  // checkpoint thread below (docs/performance.md bounds RSS at 140). The pages left out are in the
  // OS's cache anyway.
  conn.pragma('cache_size = -4000');
  // The server copies the WAL back on a thread of its own (src/db/checkpointer.ts); SQLite's own
  // checkpoint after a commit stays as the fallback, at a higher mark.
  const checkpointer =
    options.backgroundCheckpoints && file !== ':memory:'
      ? startCheckpointer({
          conn,
          file: resolve(file),
          library: require.resolve('better-sqlite3'),
          intervalMs: CHECKPOINT_INTERVAL_MS,
          pages: CHECKPOINT_PAGES,
          logger,
        })
      : undefined;
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
  client.destroyRawConnection = async () => (checkpointer ? checkpointer.close(() => conn.close()) : conn.close());
  // knex transactions hold the gate; the fast statements wait for it.
  const gate = new TransactionGate();
  return openedDatabase(db, withSpans(db, sqliteFast(conn, gate), 'sqlite'), gate, checkpointer);
}

export interface ConnectOptions {
  logger?: Logger;
  /** SQLite: checkpoint the WAL on a thread of its own (the server; a CLI command has no load to keep it off). */
  backgroundCheckpoints?: boolean;
}

/** How often the checkpoint thread looks at the WAL, and how many frames in it wait before it copies them (SQLite's default mark). */
const CHECKPOINT_INTERVAL_MS = 100;
const CHECKPOINT_PAGES = 1000;

/** Opens the database named by a `postgres://…` or `sqlite:PATH` URL. */
export function connect(databaseUrl: string, options: ConnectOptions = {}): Database {
  const { logger } = options;
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl.slice('sqlite:'.length) || './data/latchkey.db', options);
  const db = knexFactory({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: 0, max: 10 },
    log: knexLog(logger),
  });
  return openedDatabase(db, withSpans(db, pgFast(db), 'postgresql'));
}

/** True before the first migration ran: the database holds nothing of Latchkey's yet (knex's own table is the first thing made). */
export const isFresh = async ({ knex }: Database): Promise<boolean> => !(await knex.schema.hasTable('knex_migrations'));

/** Applies every pending migration (src/db/migrations.ts lists them); the same files serve SQLite and PostgreSQL. */
export async function migrate({ knex }: Database): Promise<string[]> {
  const [, applied] = (await knex.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}
