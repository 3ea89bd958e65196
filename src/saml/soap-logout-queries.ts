import type { Database } from '../db/database.ts';
import { num } from '../db/rows.ts';
import { deliveryQueueQueries } from '../outbound/delivery-queue-queries.ts';
import type { EndingSessions, NameIdFormat, QueuedSamlLogout, SamlLogoutTarget } from './model.ts';

const toQueued = (r: Record<string, unknown>): QueuedSamlLogout => ({
  id: String(r.id),
  spId: String(r.sp_id),
  userId: String(r.user_id),
  nameId: String(r.name_id),
  nameIdFormat: String(r.name_id_format) as NameIdFormat,
  sessionIndex: String(r.session_index),
  attempts: num(r.attempts),
});

/** The SOAP logout queue `saml_logouts` (docs/saml-applications.md "Single logout by SOAP"), a sibling of `backchannel_logouts`. */
export const samlLogoutQueries = (database: Database) => {
  const db = database.knex;
  return {
    /**
     * Whom to tell when these sessions end: the participants of each live session (an expired one
     * sends nothing) whose SP has a SOAP SingleLogoutService. Participants a front-channel logout
     * already took are no longer there.
     */
    async targets(where: EndingSessions, now: number): Promise<SamlLogoutTarget[]> {
      const q = db('saml_session_participants as p')
        .join('sso_sessions as s', 's.id_hash', 'p.session_id')
        .join('saml_service_providers as sp', 'sp.id', 'p.sp_id')
        .whereNotNull('sp.slo_soap_url')
        .andWhere('s.expires_at', '>', now)
        .select('p.session_id', 's.user_id', 'p.sp_id', 'p.name_id', 'p.name_id_format');
      if ('sessionId' in where) q.andWhere('p.session_id', where.sessionId);
      else {
        q.andWhere('s.user_id', where.userId);
        if (where.except) q.andWhereNot('s.id_hash', where.except);
      }
      const rows = (await q) as Array<Record<string, unknown>>;
      return rows.map((r) => ({
        sessionId: String(r.session_id),
        userId: String(r.user_id),
        spId: String(r.sp_id),
        nameId: String(r.name_id),
        nameIdFormat: String(r.name_id_format) as NameIdFormat,
      }));
    },

    /** The participants of the sessions that end, gone with them: each SP is told once. Before the sessions go (it finds them by user). */
    async forgetParticipants(where: EndingSessions): Promise<void> {
      const q = db('saml_session_participants');
      if ('sessionId' in where) {
        await q.where({ session_id: where.sessionId }).delete();
        return;
      }
      const sessions = db('sso_sessions').select('id_hash').where({ user_id: where.userId });
      if (where.except) sessions.andWhereNot({ id_hash: where.except });
      await q.whereIn('session_id', sessions).delete();
    },

    ...deliveryQueueQueries(database, {
      table: 'saml_logouts',
      toRow: (r) => ({
        id: r.id,
        sp_id: r.spId,
        user_id: r.userId,
        name_id: r.nameId,
        name_id_format: r.nameIdFormat,
        session_index: r.sessionIndex,
      }),
      fromRow: toQueued,
    }),
  };
};

export type SamlLogoutQueries = ReturnType<typeof samlLogoutQueries>;
