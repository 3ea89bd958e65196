import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import pg from 'pg';

/**
 * The few SQL pieces the fill needs that SQLite and PostgreSQL spell differently: a series of row
 * numbers `i`, and deterministic hashes and UUIDs of a text (so the n-th token can name the n-th
 * user's id without a lookup). Everything else in the fill's statements is common SQL.
 */
export interface FillSql {
  kind: 'sqlite' | 'postgres';
  run(sql: string, params?: unknown[]): Promise<void>;
  rows(sql: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** Prefix and FROM item of a query over the numbers `from` to `to` (inclusive), as column `i`. */
  series(from: number, to: number): { with: string; from: string };
  /** The SHA-256 of a text in base64url: how the server stores token and secret hashes. */
  hash(text: string): string;
  /** A random-looking version-4 UUID's shape, as randomUUID() gives users and clients. */
  uuid(text: string): string;
  /**
   * Drops the table's indexes that back no constraint and returns the statements that make them
   * again, exactly as they were: built once over the filled table, they take a fraction of the time
   * that ten million inserts in random order into each would.
   */
  dropIndexes(table: string): Promise<string[]>;
  close(): Promise<void>;
}

const uuidOf = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;

const require = createRequire(import.meta.url);

interface SqliteDb {
  exec(sql: string): void;
  pragma(sql: string): unknown;
  prepare(sql: string): { run(...p: unknown[]): unknown; all(...p: unknown[]): Array<Record<string, unknown>> };
  function(name: string, o: { deterministic: boolean }, f: (t: string) => string): void;
  close(): void;
}

/**
 * SQLite through better-sqlite3 (the server's driver): WAL as the server keeps it, and for the fill
 * only, no fsync and a large page cache (the indexes of ten million rows are written in random order).
 */
export function sqliteFill(file: string): FillSql {
  const Database = require('better-sqlite3') as new (file: string) => SqliteDb;
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -4000000');
  // Every row the fill writes names a user and a client it wrote first (bench/scale-fill.ts): the
  // per-row check of each reference is skipped, as a restore of a dump skips it.
  db.pragma('foreign_keys = OFF');
  db.function('scale_hash', { deterministic: true }, (t) => createHash('sha256').update(t).digest('base64url'));
  db.function('scale_uuid', { deterministic: true }, (t) => uuidOf(createHash('md5').update(t).digest('hex')));
  return {
    kind: 'sqlite',
    run: async (sql, params = []) => void db.prepare(sql).run(...params),
    rows: async (sql, params = []) => db.prepare(sql).all(...params),
    series: (from, to) => ({
      with: `with recursive s(i) as (select ${from} union all select i + 1 from s where i < ${to})`,
      from: 's',
    }),
    hash: (t) => `scale_hash(${t})`,
    uuid: (t) => `scale_uuid(${t})`,
    dropIndexes: async (table) => {
      // Indexes SQLite makes for a primary key or a unique constraint have no SQL: they stay.
      const indexes = db
        .prepare("select name, sql from sqlite_master where type = 'index' and tbl_name = ? and sql is not null")
        .all(table);
      for (const ix of indexes) db.exec(`drop index "${ix.name}"`);
      return indexes.map((ix) => String(ix.sql));
    },
    close: async () => {
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  };
}

/** PostgreSQL through one connection: functions in pg_temp live as long as it does. */
export async function postgresFill(url: string): Promise<FillSql> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // Bulk-load settings of this session only; the server's own settings are untouched.
  await client.query("set maintenance_work_mem = '1GB'");
  await client.query('set synchronous_commit = off');
  // The references' triggers skipped for this session, as pg_restore does (the bench connects as a superuser).
  await client.query('set session_replication_role = replica');
  await client.query(`create function pg_temp.scale_uuid(t text) returns text language sql immutable as $$
    select overlay(overlay(md5(t) placing '4' from 13) placing '8' from 17)::uuid::text $$`);
  return {
    kind: 'postgres',
    run: async (sql, params = []) => void (await client.query(sql, params)),
    rows: async (sql, params = []) => (await client.query(sql, params)).rows as Array<Record<string, unknown>>,
    series: (from, to) => ({ with: '', from: `generate_series(${from}::bigint, ${to}::bigint) as s(i)` }),
    hash: (t) => `rtrim(translate(encode(sha256(convert_to(${t}, 'UTF8')), 'base64'), '+/', '-_'), '=')`,
    uuid: (t) => `pg_temp.scale_uuid(${t})`,
    dropIndexes: async (table) => {
      const { rows } = await client.query(
        `select indexname, indexdef from pg_indexes i where tablename = $1 and schemaname = current_schema()
           and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`,
        [table],
      );
      for (const ix of rows) await client.query(`drop index "${ix.indexname}"`);
      return rows.map((ix) => String(ix.indexdef));
    },
    close: () => client.end(),
  };
}
