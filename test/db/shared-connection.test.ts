import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { auditQueries } from '../../src/audit/queries.ts';
import { connect, migrate, type Database } from '../../src/db/connect.ts';
import { freshDatabase, type TestDatabase } from '../helpers/databases.ts';

/**
 * On SQLite one connection serves knex's transactions (the admin changes) and the hot statements.
 * A write acknowledged while such a transaction is open, and then rolled back, must not have been
 * part of it: it is committed, on its own.
 */
let database: TestDatabase;
let db: Database;
beforeAll(async () => {
  database = await freshDatabase('sqlite');
  db = connect(database.url);
  await migrate(db);
});
afterAll(async () => {
  await db.knex.destroy();
  await database.drop();
});

test('writes acknowledged during a transaction that rolls back are all there afterwards', async () => {
  const audit = auditQueries(db);
  const rolledBack = db.transaction(async (trx) => {
    await trx.knex('audit_events').insert({ at: 1, kind: 'admin.change', details: '{"action":"rolled back"}' });
    await new Promise((r) => setTimeout(r, 50));
    throw new Error('the change fails');
  });
  // Twenty requests' writes arrive while that transaction is open.
  const writes = Array.from({ length: 20 }, (_, i) => audit.insert({ kind: 'token.issued', requestId: `r-${i}` }, 2));
  await expect(rolledBack).rejects.toThrow('the change fails');
  await Promise.all(writes);
  const kept = await db.knex('audit_events').where({ kind: 'token.issued' }).count({ n: '*' }).first();
  expect(Number(kept?.n)).toBe(20);
  expect(await db.knex('audit_events').where({ kind: 'admin.change' })).toEqual([]);
});
