import type { Knex } from 'knex';

/**
 * The brute-force count holds attempts in flight apart from failures (docs/decisions.md, "Right passwords under
 * concurrency"): `inflight` attempts are being checked now, under a lease that ends at
 * `inflight_until` (a process that dies mid-check frees its slots when the lease runs out).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('login_throttle', (t) => {
    t.integer('inflight').notNullable().defaultTo(0);
    t.bigInteger('inflight_until').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('login_throttle', (t) => {
    t.dropColumn('inflight');
    t.dropColumn('inflight_until');
  });
}
