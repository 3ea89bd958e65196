import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { configSchema } from '../../src/config/schema.ts';
import { connect, migrate, type Database } from '../../src/db/connect.ts';
import { loginThrottle, type Lane, type Reservation } from '../../src/throttle/login-throttle.ts';
import { throttleQueries } from '../../src/throttle/throttle-queries.ts';
import { databaseKinds, freshDatabase, type TestDatabase } from '../helpers/databases.ts';

/**
 * The throttle lets an attempt whose keys this process's own attempts in flight already fill wait in
 * memory for one of them, instead of asking the database (which could only refuse it). What that must
 * not change: the waiting attempt gets the slot as soon as one is given back, and a delay running on
 * such a key is still answered at once, with its length.
 */
describe.each(databaseKinds)('the throttle on %s, with every slot of a key held by this process', (kind) => {
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

  const policy = (overrides: Record<string, number>) => ({ ...configSchema.shape.throttle.parse({}), ...overrides });
  const granted = (r: Reservation) => {
    if (r.blocked) throw new Error(`refused: retry after ${r.retryAfter} s`);
    return r.release;
  };

  test('the next attempt waits, and takes the slot the moment one of them ends', async () => {
    const throttle = loginThrottle(throttleQueries(db), policy({ slotWait: 30 }));
    const lane: Lane = { kind: 'confidential', clientId: 'app' };
    // userFreeFailures (5): at most five attempts of one account lane are checked at once.
    const five = (await Promise.all(Array.from({ length: 5 }, () => throttle.reserve('account-1', '192.0.2.1', lane)))).map(granted);

    const order: string[] = [];
    const sixth = throttle.reserve('account-1', '192.0.2.1', lane).then((r) => {
      order.push('sixth answered');
      return r;
    });
    // Give the sixth every chance to be answered wrongly before a slot is free.
    await new Promise((resolve) => setImmediate(resolve));
    order.push('a slot given back');
    await five[0]!.succeeded();

    const release = granted(await sixth);
    expect(order).toEqual(['a slot given back', 'sixth answered']);
    await Promise.all([release, ...five.slice(1)].map((r) => r.succeeded()));
  });

  test('a delay running on that key is answered at once with its length, not after the slot wait', async () => {
    // The first delay 60 s, and a slot wait far longer than the test's own timeout.
    const throttle = loginThrottle(throttleQueries(db), policy({ userBaseDelay: 60, slotWait: 600 }));
    const browser: Lane = { kind: 'browser' };
    // Five browsers without a device cookie hold every slot of the account's shared key (`u:`)…
    (await Promise.all(Array.from({ length: 5 }, () => throttle.reserve('account-2', '192.0.2.2', browser)))).forEach(granted);
    // …while a confidential client's wrong passwords count on that key too, until it is delayed.
    for (let i = 0; i < 5; i++)
      await granted(await throttle.reserve('account-2', '192.0.2.3', { kind: 'confidential', clientId: 'app' })).failed();

    const sixth = await throttle.reserve('account-2', '192.0.2.2', browser);
    expect(sixth.blocked).toBe(true);
    expect(sixth.blocked && sixth.retryAfter).toBeGreaterThan(50);
  });
});
