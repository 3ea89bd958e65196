import knexFactory, { type Knex } from 'knex';
import type { TestDatabase } from './databases.ts';

/**
 * A connection of the test's own to a server's database (SQLite file or PostgreSQL), so a test can
 * change or read the database behind the server's back. Closed after `use`.
 */
export async function withOwnConnection<T>(db: TestDatabase, use: (k: Knex) => Promise<T>): Promise<T> {
  const k = db.url.startsWith('sqlite:')
    ? knexFactory({
        client: 'better-sqlite3',
        connection: { filename: db.url.slice('sqlite:'.length) },
        useNullAsDefault: true,
        pool: {
          min: 1,
          max: 1,
          afterCreate(conn: { pragma(sql: string): unknown }, done: (err: Error | null, conn: unknown) => void) {
            conn.pragma('busy_timeout = 5000');
            done(null, conn);
          },
        },
      })
    : knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 1 } });
  try {
    return await use(k);
  } finally {
    await k.destroy();
  }
}

export interface InjectedFault {
  /** Drops the trigger: the database works normally again. */
  remove(): Promise<void>;
}

/**
 * A real database fault: a trigger that makes every INSERT into `table` fail, created through a
 * connection of the test's own (the server is not told). SQLite: `RAISE(ABORT, …)`; PostgreSQL: a
 * plpgsql function raising an exception.
 */
export async function failInsertsInto(db: TestDatabase, table: string): Promise<InjectedFault> {
  const name = `injected_fault_${table}`;
  if (db.url.startsWith('sqlite:')) {
    await withOwnConnection(db, (k) =>
      k.raw(`CREATE TRIGGER ${name} BEFORE INSERT ON ${table} BEGIN SELECT RAISE(ABORT, 'injected fault'); END`),
    );
    return { remove: () => withOwnConnection(db, (k) => k.raw(`DROP TRIGGER IF EXISTS ${name}`)).then(() => undefined) };
  }
  await withOwnConnection(db, async (k) => {
    await k.raw(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$`);
    await k.raw(`CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
  });
  return {
    remove: () =>
      withOwnConnection(db, async (k) => {
        await k.raw(`DROP TRIGGER IF EXISTS ${name} ON ${table}`);
        await k.raw(`DROP FUNCTION IF EXISTS ${name}()`);
      }),
  };
}
