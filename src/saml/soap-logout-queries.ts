import type { Database } from '../db/database.ts';
import { num } from '../db/rows.ts';
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
export const samlLogoutQueries = ({ knex: db }: Database) => ({
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

  async enqueue(rows: Array<Omit<QueuedSamlLogout, 'attempts'>>, now: number): Promise<void> {
    if (rows.length === 0) return;
    await db('saml_logouts').insert(
      rows.map((r) => ({
        id: r.id,
        sp_id: r.spId,
        user_id: r.userId,
        name_id: r.nameId,
        name_id_format: r.nameIdFormat,
        session_index: r.sessionIndex,
        attempts: 0,
        due_at: now,
        claimed_until: null,
        created_at: now,
      })),
    );
  },

  /**
   * Claims up to `limit` due requests until `until`: each by one conditional UPDATE, so of any number
   * of processes claiming at once one gets a row; a claim left by a process that died expires.
   */
  async claim(now: number, until: number, limit: number): Promise<QueuedSamlLogout[]> {
    const due = (await db('saml_logouts')
      .where('due_at', '<=', now)
      .andWhere((w) => w.whereNull('claimed_until').orWhere('claimed_until', '<', now))
      .orderBy('due_at')
      .limit(limit)
      .select('*')) as Array<Record<string, unknown>>;
    const claimed: QueuedSamlLogout[] = [];
    for (const r of due) {
      const won = await db('saml_logouts')
        .where({ id: r.id as string })
        .andWhere((w) => w.whereNull('claimed_until').orWhere('claimed_until', '<', now))
        .update({ claimed_until: until });
      if (won === 1) claimed.push(toQueued(r));
    }
    return claimed;
  },

  async remove(id: string): Promise<void> {
    await db('saml_logouts').where({ id }).delete();
  },

  /** Another try at `dueAt`; the claim is released. */
  async retryAt(id: string, attempts: number, dueAt: number): Promise<void> {
    await db('saml_logouts').where({ id }).update({ attempts, due_at: dueAt, claimed_until: null });
  },
});

export type SamlLogoutQueries = ReturnType<typeof samlLogoutQueries>;
