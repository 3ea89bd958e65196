import type { Database } from '../../db/database.ts';

/** `upstream_sign_ins`: a sign-in away at an upstream, until its callback takes it (once). */
export const roundTripQueries = ({ knex: db }: Database) => ({
  async insert(id: string, upstreamId: string, data: string, expiresAt: number): Promise<void> {
    await db('upstream_sign_ins').insert({ id, upstream_id: upstreamId, data, expires_at: expiresAt });
  },
  /** The row's data, deleted by this call; undefined when missing, expired, or taken by a concurrent call. */
  async take(id: string, upstreamId: string, now: number): Promise<string | undefined> {
    const row = await db('upstream_sign_ins').where({ id, upstream_id: upstreamId }).andWhere('expires_at', '>', now).first('data');
    if (!row) return undefined;
    const taken = await db('upstream_sign_ins').where({ id }).delete();
    return taken > 0 ? String(row.data) : undefined;
  },
});

export type RoundTripQueries = ReturnType<typeof roundTripQueries>;
