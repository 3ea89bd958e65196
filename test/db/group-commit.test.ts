import { describe, expect, test } from '@jest/globals';
import { statement } from '../../src/db/statements.ts';
import { databaseKinds, migratedDatabase } from '../helpers/databases.ts';

/**
 * The group commit (src/db/database.ts): the jobs of concurrent requests share one commit, and each
 * job is all or nothing on its own. Whatever one job meets (a refused check on its first step or a
 * later one, a constraint), the other jobs of its group commit and its own writes are all undone.
 */
const insert = statement('insert into login_throttle (key, failures, window_start, blocked_until) values (?, 0, 0, 0)');
const bump = statement('update login_throttle set failures = failures + 1 where key like ?');

describe.each(databaseKinds)('the group commit on %s', (kind) => {
  const db = migratedDatabase(kind);

  const keys = async (prefix: string) =>
    (await db().knex('login_throttle').where('key', 'like', `${prefix}%`).orderBy('key').select('key', 'failures')).map(
      (r: { key: string; failures: number | string }) => `${r.key}:${Number(r.failures)}`,
    );

  test('a job refused by a constraint fails alone: the jobs queued with it commit', async () => {
    await db().fast.groupCommit([{ stmt: insert, params: ['c-taken'] }]);
    // Queued in one turn of the event loop: one group.
    const jobs = [
      db().fast.groupCommit([{ stmt: insert, params: ['c-1'] }]),
      db().fast.groupCommit([
        { stmt: insert, params: ['c-2'] },
        { stmt: insert, params: ['c-taken'] },
      ]),
      db().fast.groupCommit([{ stmt: insert, params: ['c-3'] }]),
    ];
    const [first, failed, last] = await Promise.allSettled(jobs);
    expect(first).toEqual({ status: 'fulfilled', value: [1] });
    expect(failed?.status).toBe('rejected');
    expect(last).toEqual({ status: 'fulfilled', value: [1] });
    // c-2 was inserted before the constraint refused the job's second step: undone with it.
    expect(await keys('c-')).toEqual(['c-1:0', 'c-3:0', 'c-taken:0']);
  });

  test('a check refused on a first step that changed nothing: that job is null, the others commit', async () => {
    const [a, refused, b] = await Promise.all([
      db().fast.groupCommit([{ stmt: insert, params: ['f-1'] }]),
      db().fast.groupCommit([
        { stmt: bump, params: ['f-none'], expectRows: 1 },
        { stmt: insert, params: ['f-never'] },
      ]),
      db().fast.groupCommit([{ stmt: insert, params: ['f-2'] }]),
    ]);
    expect([a, refused, b]).toEqual([[1], null, [1]]);
    expect(await keys('f-')).toEqual(['f-1:0', 'f-2:0']);
  });

  test('a check refused on a first step that changed rows: undone whole, the others commit', async () => {
    await db().fast.groupCommit([
      { stmt: insert, params: ['w-a'] },
      { stmt: insert, params: ['w-b'] },
    ]);
    const [refused, other] = await Promise.all([
      // Two rows match where one is expected: the update ran, and must not stay.
      db().fast.groupCommit([{ stmt: bump, params: ['w-%'], expectRows: 1 }]),
      db().fast.groupCommit([{ stmt: insert, params: ['w-c'] }]),
    ]);
    expect(refused).toBeNull();
    expect(other).toEqual([1]);
    expect(await keys('w-')).toEqual(['w-a:0', 'w-b:0', 'w-c:0']);
  });

  test('a check refused on a later step undoes the steps before it, and only them', async () => {
    await db().fast.groupCommit([{ stmt: insert, params: ['l-a'] }]);
    const [refused, other] = await Promise.all([
      db().fast.groupCommit([
        { stmt: bump, params: ['l-a'], expectRows: 1 },
        { stmt: bump, params: ['l-none'], expectRows: 1 },
      ]),
      db().fast.groupCommit([
        { stmt: bump, params: ['l-a'], expectRows: 1 },
        { stmt: insert, params: ['l-b'] },
      ]),
    ]);
    expect(refused).toBeNull();
    expect(other).toEqual([1, 1]);
    // One bump of l-a: the refused job's was undone, the other's kept.
    expect(await keys('l-')).toEqual(['l-a:1', 'l-b:0']);
  });
});
