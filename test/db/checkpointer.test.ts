import { copyFileSync, existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { connect, migrate, type Database } from '../../src/db/connect.ts';
import { FALLBACK_PAGES } from '../../src/db/checkpointer.ts';
import { freshDatabase, type TestDatabase } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';

/**
 * The server's SQLite connection leaves the WAL checkpoint to a thread of its own
 * (src/db/checkpointer.ts). What that must keep true: what is committed reaches the database file
 * without the server doing anything more, the WAL stays bounded under writes that never pause, and
 * closing the database closes the thread's connection too (SQLite then removes the WAL).
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

test('committed writes reach the database file with no further write', async () => {
  // 1,200 pages of 3 KB rows: past the thread's mark of 1,000 pages, below SQLite's own fallback (FALLBACK_PAGES).
  for (let i = 0; i < 24; i++) await db.knex('filler').insert(Array.from({ length: 50 }, () => ({ body: Buffer.alloc(3000, i) })));
  await eventually('the 1,200 rows are in the database file', async () => rowsInTheFileAlone() === 1200);
});

test('the WAL stays bounded while writes never pause', async () => {
  // 3 × FALLBACK_PAGES pages of rows, committed one after another with no idle moment between them.
  const rowsPerCommit = 50;
  const commits = Math.ceil((3 * FALLBACK_PAGES) / rowsPerCommit);
  let largest = 0;
  for (let i = 0; i < commits; i++) {
    await db.knex('filler').insert(Array.from({ length: rowsPerCommit }, () => ({ body: Buffer.alloc(3000, 7) })));
    largest = Math.max(largest, statSync(`${file}-wal`).size);
  }
  // The WAL is reused from its start once a checkpoint copied all of it, which SQLite's own fallback
  // does at FALLBACK_PAGES unless the thread holds the checkpoint then; a frame is a page and its header.
  expect(largest).toBeLessThan(2 * FALLBACK_PAGES * (4096 + 24));
  const total = (await db.knex('filler').count({ n: '*' }).first()) as { n: number };
  expect(Number(total.n)).toBe(1200 + commits * rowsPerCommit);
});

test('closing the database closes the checkpoint thread connection too', async () => {
  expect(existsSync(`${file}-wal`)).toBe(true);
  await db.knex.destroy();
  // SQLite removes the WAL when the last connection to the file closes: a connection left open on the
  // thread would keep it.
  expect(existsSync(`${file}-wal`)).toBe(false);
  const reopened = new BetterSqlite(file, { readonly: true });
  expect((reopened.prepare('select count(*) as n from filler').get() as { n: number }).n).toBeGreaterThan(1200);
  reopened.close();
});
