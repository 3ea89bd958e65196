import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { onCleanup } from './cleanup.ts';
import type { DatabaseKind } from './options.ts';

/** Where the bench creates its throwaway PostgreSQL databases (the same server the tests use). */
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface BenchDatabase {
  url: string;
  /** For the report: "SQLite (file in /tmp)" or "PostgreSQL 15.x". */
  description: string;
}

async function onAdmin<T>(run: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * A database nobody has used: a new SQLite file in the run's temp dir (removed with it), or a new
 * PostgreSQL database, dropped at cleanup (WITH (FORCE): a server that was killed may still hold
 * connections).
 */
export async function freshDatabase(kind: DatabaseKind, workDir: string, label: string): Promise<BenchDatabase> {
  if (kind === 'sqlite') {
    return { url: `sqlite:${join(workDir, `${label}.db`)}`, description: 'SQLite (a fresh file)' };
  }
  // An identifier: a label such as the tracing phase's `traced-always_on` is made one.
  const name = `latchkey_bench_${label.replace(/\W/g, '_')}_${randomBytes(4).toString('hex')}`;
  const version = await onAdmin(async (c) => {
    await c.query(`CREATE DATABASE ${name}`);
    return String((await c.query('SHOW server_version')).rows[0]?.server_version ?? '?');
  });
  onCleanup(`drop database ${name}`, () => onAdmin(async (c) => void (await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), description: `PostgreSQL ${version} (a fresh database on ${url.host})` };
}
