import { expect, test } from '@jest/globals';
import { unlistedMigrations } from '../../src/db/migrations.ts';

test('every file in migrations/ is listed in src/db/migrations.ts, so the bundle carries it', () => {
  expect(unlistedMigrations()).toEqual([]);
});
