import type { Database } from '../db/database.ts';

/** What every queued delivery is: an id, and the tries made so far. */
export interface Queued {
  id: string;
  attempts: number;
}

/** One kind of queued delivery's table, and how its items become rows and back. */
export interface DeliveryQueue<T extends Queued> {
  table: string;
  /** The item's own columns, its id among them; the queue adds `attempts`, `due_at`, `claimed_until`, `created_at`. */
  toRow(item: Omit<T, 'attempts'>): Record<string, unknown>;
  fromRow(row: Record<string, unknown>): T;
}

/**
 * The queue under a delivery loop (src/outbound/delivery-loop.ts): a table of items due at `due_at`,
 * each leased by `claimed_until` to the process sending it. The back-channel logout notices and the
 * SAML logouts by SOAP each keep one.
 */
export const deliveryQueueQueries = <T extends Queued>({ knex: db }: Database, queue: DeliveryQueue<T>) => ({
  /** New items, due now. */
  async enqueue(items: Array<Omit<T, 'attempts'>>, now: number): Promise<void> {
    if (items.length === 0) return;
    await db(queue.table).insert(
      items.map((item) => ({ ...queue.toRow(item), attempts: 0, due_at: now, claimed_until: null, created_at: now })),
    );
  },

  /**
   * Claims up to `limit` due items until `until`: each by one conditional UPDATE, so of any number
   * of processes claiming at once one gets a row; a claim left by a process that died expires.
   */
  async claim(now: number, until: number, limit: number): Promise<T[]> {
    const due = (await db(queue.table)
      .where('due_at', '<=', now)
      .andWhere((w) => w.whereNull('claimed_until').orWhere('claimed_until', '<', now))
      .orderBy('due_at')
      .limit(limit)
      .select('*')) as Array<Record<string, unknown>>;
    const claimed: T[] = [];
    for (const r of due) {
      const won = await db(queue.table)
        .where({ id: r.id as string })
        .andWhere((w) => w.whereNull('claimed_until').orWhere('claimed_until', '<', now))
        .update({ claimed_until: until });
      if (won === 1) claimed.push(queue.fromRow(r));
    }
    return claimed;
  },

  async remove(id: string): Promise<void> {
    await db(queue.table).where({ id }).delete();
  },

  /** Another try at `dueAt`; the claim is released. */
  async retryAt(id: string, attempts: number, dueAt: number): Promise<void> {
    await db(queue.table).where({ id }).update({ attempts, due_at: dueAt, claimed_until: null });
  },
});
