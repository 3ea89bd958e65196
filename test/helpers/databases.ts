import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import pg from 'pg';
import { connect, migrate, type Database } from '../../src/db/connect.ts';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A PostgreSQL server to make throwaway databases on; a missing server fails the tests, never skips. */
const pgBase = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function freshPostgres(): Promise<TestDatabase> {
  const name = `latchkey_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgBase });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(pgBase);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: pgBase });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

function freshSqlite(): TestDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-test-'));
  return {
    url: `sqlite:${join(dir, 'latchkey.db')}`,
    async drop() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type DatabaseKind = 'sqlite' | 'postgres';

/** Every storage test runs on both databases: one suite, two databases. */
export const databaseKinds: DatabaseKind[] = ['sqlite', 'postgres'];

export const freshDatabase = (kind: DatabaseKind): Promise<TestDatabase> =>
  kind === 'sqlite' ? Promise.resolve(freshSqlite()) : freshPostgres();

/**
 * A fresh database of `kind`, migrated and connected before the suite's tests and dropped after them:
 * the suite reads it through the returned function once its tests run.
 */
export function migratedDatabase(kind: DatabaseKind): () => Database {
  let database: TestDatabase;
  let db: Database;
  beforeAll(async () => {
    database = await freshDatabase(kind);
    db = connect(database.url);
    await migrate(db);
  });
  afterAll(async () => {
    await db.knex.destroy();
    await database.drop();
  });
  return () => db;
}
