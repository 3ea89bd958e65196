import { copyFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { connect, migrate, type Database } from '../../src/db/connect.ts';
import { freshDatabase, type TestDatabase } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';

/**
 * The server's SQLite connection leaves the WAL checkpoint to a thread of its own
 * (src/db/checkpointer.ts). What that must keep true: what is committed reaches the database file
 * without the server doing anything more, and closing the database closes the thread's connection too
 * (SQLite then removes the WAL).
 */
const BetterSqlite = createRequire(import.meta.url)('better-sqlite3') as new (
  file: string,
  o?: { readonly?: boolean },
) => { prepare(sql: string): { get(): unknown }; close(): void };

let database: TestDatabase;
let db: Database;
let file: string;
beforeAll(async () => {
  database = await freshDatabase('sqlite');
  file = database.url.slice('sqlite:'.length);
  db = connect(database.url, { backgroundCheckpoints: true });
  await migrate(db);
  await db.knex.raw('create table filler (id integer primary key, body blob not null)');
});
afterAll(async () => {
  await db.knex.destroy().catch(() => undefined);
  await database.drop();
});

/** The rows of `filler` in the database file alone, as a copy without its WAL sees them. */
function rowsInTheFileAlone(): number {
  const copy = `${file}.copy`;
  copyFileSync(file, copy);
  const reader = new BetterSqlite(copy, { readonly: true });
  try {
    return (reader.prepare('select count(*) as n from filler').get() as { n: number }).n;
  } catch {
    return 0; // the table itself is not in the file yet
  } finally {
    reader.close();
  }
}

test('committed writes reach the database file with no further write, but for less than a checkpoint mark', async () => {
  // 2,400 rows of 3 KB, a page each, in 48 commits: far below SQLite's fallback (FALLBACK_PAGES), so
  // only the thread copies them, each time 1,000 pages or more wait. What it leaves is under that mark.
  for (let i = 0; i < 48; i++) await db.knex('filler').insert(Array.from({ length: 50 }, () => ({ body: Buffer.alloc(3000, i) })));
  await eventually('all but fewer than 1,000 of the 2,400 rows are in the database file', async () => rowsInTheFileAlone() > 1400);
});

test('closing the database closes the checkpoint thread connection too', async () => {
  expect(existsSync(`${file}-wal`)).toBe(true);
  await db.knex.destroy();
  // SQLite removes the WAL when the last connection to the file closes: a connection left open on the
  // thread would keep it.
  expect(existsSync(`${file}-wal`)).toBe(false);
  const reopened = new BetterSqlite(file, { readonly: true });
  expect((reopened.prepare('select count(*) as n from filler').get() as { n: number }).n).toBe(2400);
  reopened.close();
});
