import type { Knex } from 'knex';

/** One round trip: whether the database answers (for `/readyz` and the database backend's health). */
export async function ping(db: Knex): Promise<void> {
  await db.raw('select 1');
}

/**
 * A write that needs the disk: an upsert of one row of `maintenance_leases` (a name no job uses), for
 * telling when a database that refused writes (a full disk) takes them again.
 */
export async function probeWrite(db: Knex): Promise<void> {
  await db('maintenance_leases')
    .insert({ name: 'write-probe', holder: 'write-probe', expires_at: Date.now() })
    .onConflict('name')
    .merge(['expires_at']);
}
