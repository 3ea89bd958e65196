import { describe, expect, test } from '@jest/globals';
import { configSchema } from '../../src/config/schema.ts';
import { loginThrottle, type Lane, type Reservation } from '../../src/throttle/login-throttle.ts';
import { throttleQueries } from '../../src/throttle/throttle-queries.ts';
import { databaseKinds, migratedDatabase } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';

/**
 * The throttle lets an attempt whose keys this process's own attempts in flight already fill wait in
 * memory for one of them, instead of asking the database (which could only refuse it). What that must
 * not change: the waiting attempt gets the slot as soon as one is given back, and a delay running on
 * such a key is still answered at once, with its length.
 */
describe.each(databaseKinds)('the throttle on %s, with every slot of a key held by this process', (kind) => {
  const db = migratedDatabase(kind);

  const policy = (overrides: Record<string, number>) => ({ ...configSchema.shape.throttle.parse({}), ...overrides });
  const granted = (r: Reservation) => {
    if (r.blocked) throw new Error(`refused: retry after ${r.retryAfter} s`);
    return r.release;
  };

  test('the next attempt waits, and takes the slot the moment one of them ends', async () => {
    const throttle = loginThrottle(throttleQueries(db()), policy({ slotWait: 30 }));
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
    const throttle = loginThrottle(throttleQueries(db()), policy({ userBaseDelay: 60, slotWait: 600 }));
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

  test.each([
    ['this process', 'account-3'],
    ['another process', 'account-5'],
  ])('waiters are served in the order they came, and a newcomer never overtakes one: slots held by %s', async (holder, account) => {
    // The real queries, watched: the first waiter reads (a refusal or the keys' delay), then stands in
    // line at once, in the same turn of the event loop: after it, it is in line.
    const queries = throttleQueries(db());
    let read = () => {};
    const watched: typeof queries = {
      ...queries,
      delayedUntil: async (...args) => {
        const until = await queries.delayedUntil(...args);
        setImmediate(read);
        return until;
      },
      reserveAll: async (...args) => {
        const refused = await queries.reserveAll(...args);
        if (refused) setImmediate(read);
        return refused;
      },
    };
    const throttle = loginThrottle(watched, policy({ slotWait: 60 }));
    // Another process: its own memory of the slots it holds, the same database.
    const other = holder === 'this process' ? throttle : loginThrottle(throttleQueries(db()), policy({ slotWait: 60 }));
    const lane: Lane = { kind: 'confidential', clientId: 'app' };
    const held = (await Promise.all(Array.from({ length: 5 }, () => other.reserve(account, '192.0.2.4', lane)))).map(granted);

    const served: string[] = [];
    const pending = new Map<string, Promise<ReturnType<typeof granted>>>();
    const arrive = (name: string) =>
      pending.set(
        name,
        throttle.reserve(account, '192.0.2.4', lane).then((r) => {
          served.push(name);
          return granted(r);
        }),
      );
    const firstRead = new Promise<void>((resolve) => (read = resolve));
    arrive('waiter 0');
    await firstRead;
    for (let i = 1; i < 6; i++) arrive(`waiter ${i}`);

    // Slots given back one at a time, a newcomer arriving with each: each slot goes to whoever is served next.
    for (let i = 0; i < 12; i++) {
      if (i < 6) arrive(`newcomer ${i}`);
      await held.shift()!.succeeded();
      await eventually(`a slot taken after ${i + 1} given back`, async () => served.length === i + 1, { everyMs: 5 });
      held.push(await pending.get(served[i]!)!);
    }
    expect(served).toEqual([
      ...Array.from({ length: 6 }, (_, i) => `waiter ${i}`),
      ...Array.from({ length: 6 }, (_, i) => `newcomer ${i}`),
    ]);
    await Promise.all(held.map((r) => r.succeeded()));
  });

  test('no slot within slotWait: refused for load (busy), not as a delay, and only once slotWait has passed', async () => {
    const throttle = loginThrottle(throttleQueries(db()), policy({ slotWait: 0.3 }));
    const lane: Lane = { kind: 'confidential', clientId: 'app' };
    const held = (await Promise.all(Array.from({ length: 5 }, () => throttle.reserve('account-4', '192.0.2.5', lane)))).map(granted);
    const started = performance.now();
    const sixth = await throttle.reserve('account-4', '192.0.2.5', lane);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(sixth).toEqual({ blocked: true, retryAfter: 1, busy: true });
    await Promise.all(held.map((r) => r.succeeded()));
    // The line it waited in is gone: the next attempt takes a free slot at once.
    granted(await throttle.reserve('account-4', '192.0.2.5', lane));
  });

  test('the waiters of one account hold back no other account behind the same address', async () => {
    // A block would show as a refusal for load after this long, not as a test timeout.
    const throttle = loginThrottle(throttleQueries(db()), policy({ slotWait: 10 }));
    const lane: Lane = { kind: 'confidential', clientId: 'app' };
    const held = (await Promise.all(Array.from({ length: 5 }, () => throttle.reserve('account-6', '192.0.2.6', lane)))).map(granted);
    const waiting = Array.from({ length: 3 }, () => throttle.reserve('account-6', '192.0.2.6', lane));
    // Another account from the same address: its slots are free, so it goes at once.
    await granted(await throttle.reserve('account-7', '192.0.2.6', lane)).succeeded();
    await Promise.all(held.map((r) => r.succeeded()));
    await Promise.all((await Promise.all(waiting)).map((r) => granted(r).succeeded()));
  });
});
