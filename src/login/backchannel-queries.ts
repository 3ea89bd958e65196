import type { Database } from '../db/database.ts';
import { num } from '../db/rows.ts';
import { deliveryQueueQueries } from '../outbound/delivery-queue-queries.ts';
import type { QueuedLogout } from './model.ts';

/** Who to tell: a session that ends and a client with a back-channel URI that got a code or token in it. */
export interface LogoutTarget {
  sessionId: string;
  userId: string;
  clientId: string;
}

const toQueued = (r: Record<string, unknown>): QueuedLogout => ({
  id: String(r.id),
  clientId: String(r.client_id),
  userId: String(r.user_id),
  sid: String(r.sid),
  attempts: num(r.attempts),
});

export const backchannelQueries = (database: Database) => {
  const db = database.knex;
  return {
    /**
     * Who to tell when these sessions end: for each live session (one, or a user's but `except`; an
     * expired one sends nothing), the clients with a back-channel URI that got a code or token in it.
     */
    async targets(where: { sessionId: string } | { userId: string; except?: string }, now: number): Promise<LogoutTarget[]> {
      // Per session, the clients with a URI that got something in it: a small set of clients, each an
      // indexed look-up by session_id.
      const gotIn = (table: string) => db(table).select('client_id').where('session_id', db.ref('s.id_hash'));
      const q = db
        .distinct('s.id_hash as session_id', 's.user_id', 'c.client_id')
        .from('sso_sessions as s')
        .join('clients as c', (j) => j.onNotNull('c.backchannel_logout_uri'))
        .andWhere('s.expires_at', '>', now)
        .andWhere((w) =>
          w
            .whereIn('c.client_id', gotIn('auth_codes'))
            .orWhereIn('c.client_id', gotIn('access_tokens'))
            .orWhereIn('c.client_id', gotIn('refresh_tokens')),
        );
      if ('sessionId' in where) q.andWhere('s.id_hash', where.sessionId);
      else {
        q.andWhere('s.user_id', where.userId);
        if (where.except) q.andWhereNot('s.id_hash', where.except);
      }
      const rows = (await q) as Array<{ session_id: string; user_id: string; client_id: string }>;
      return rows.map((r) => ({ sessionId: r.session_id, userId: r.user_id, clientId: r.client_id }));
    },

    ...deliveryQueueQueries(database, {
      table: 'backchannel_logouts',
      toRow: (r) => ({ id: r.id, client_id: r.clientId, user_id: r.userId, sid: r.sid }),
      fromRow: toQueued,
    }),
  };
};

export type BackchannelQueries = ReturnType<typeof backchannelQueries>;
