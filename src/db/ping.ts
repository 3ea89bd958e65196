import type { Db } from './connect.ts';

/** One round trip: whether the database answers (for `/readyz` and the database backend's health). */
export async function ping(db: Db): Promise<void> {
  await db.raw('select 1');
}
