import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import knexFactory, { type Knex } from 'knex';
import type { Logger } from 'pino';

export type Db = Knex;

const migrationsDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../migrations');

/**
 * knex's own messages (one "Acquire connection error" per request while the database is down) go to
 * the structured log at debug: the outage itself is logged once, by DatabaseOutage.
 */
const knexLog = (logger?: Logger) => {
  const debug = (message: unknown) => logger?.debug({ knex: String(message) }, 'knex');
  return { warn: debug, error: debug, deprecate: debug, debug };
};

/** Opens the database named by a `postgres://…` or `sqlite:PATH` URL. */
export function connect(databaseUrl: string, logger?: Logger): Db {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length) || './data/latchkey.db';
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
    return knexFactory({
      client: 'better-sqlite3',
      connection: { filename: file },
      useNullAsDefault: true,
      log: knexLog(logger),
      pool: {
        // One connection: SQLite serialises writers anyway, and a single connection keeps
        // transactions from meeting SQLITE_BUSY inside one process.
        min: 1,
        max: 1,
        afterCreate(conn: { pragma(sql: string): unknown }, done: (err: Error | null, conn: unknown) => void) {
          conn.pragma('journal_mode = WAL');
          conn.pragma('synchronous = NORMAL');
          conn.pragma('foreign_keys = ON');
          conn.pragma('busy_timeout = 5000');
          done(null, conn);
        },
      },
    });
  }
  return knexFactory({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: 0, max: 10 },
    log: knexLog(logger),
  });
}

/** Applies every pending migration in `migrations/`; the same files serve SQLite and PostgreSQL. */
export async function migrate(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ directory: migrationsDir, loadExtensions: ['.ts'] })) as [
    number,
    string[],
  ];
  return applied;
}
