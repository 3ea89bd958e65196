import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { foldRowCounts } from '../db/row-counts.ts';
import type { PurgedTable } from './model.ts';

/** What makes a row of each table dead, as of `now` (ms). */
export interface Cutoffs {
  now: number;
  /** Throttle rows whose window started before this and that block nobody count for nothing. */
  throttleWindowStart: number;
  /** The same for the wrong second-factor codes (`m:` keys), counted over a longer window. */
  codeWindowStart: number;
  /** Audit events before this go; undefined keeps them all. */
  auditBefore?: number;
}

const keyOf: Record<PurgedTable, string> = {
  auth_codes: 'code_hash',
  access_tokens: 'token_hash',
  refresh_tokens: 'token_hash',
  sso_sessions: 'id_hash',
  login_throttle: 'key',
  audit_events: 'id',
  webauthn_challenges: 'challenge',
  pending_sign_ins: 'id',
  // Its key is (client_id, jti): deleteBatch checks expiry again, so another client's live jti stays.
  client_assertion_jtis: 'jti',
  device_codes: 'device_code_hash',
  password_reset_tokens: 'token_hash',
  upstream_sign_ins: 'id',
  saml_request_ids: 'id_hash',
  // Its key is (session_id, sp_id): deleteBatch checks expiry again, so a live row of the same session stays.
  saml_session_participants: 'session_id',
  webhook_deliveries: 'id',
};

/**
 * Expired codes, tokens (a revoked refresh family's too: once expired it can no longer be replayed),
 * sessions, pending sign-ins and WebAuthn challenges (used or not: an expired one is refused anyway); throttle rows
 * that block nobody and whose window has passed; old audit events. Every condition is on an indexed
 * column, so a batch is an index range read.
 */
function dead(db: Knex, table: PurgedTable, c: Cutoffs) {
  const q = db(table).select(keyOf[table]);
  if (table === 'login_throttle') {
    return q
      .where('window_start', '<', c.throttleWindowStart)
      .andWhere('blocked_until', '<=', c.now)
      .andWhere('inflight_until', '<=', c.now)
      .andWhere((w) => w.where('key', 'not like', 'm:%').orWhere('window_start', '<', c.codeWindowStart));
  }
  if (table === 'audit_events') {
    // Never an event a sink (a webhook, syslog) has still to send: it is past every sink's cursor (docs/decisions.md "Events out").
    const past =
      db.client.config.client === 'pg' ? '(audit_events.txid, audit_events.id) > (s.txid, s.event_id)' : 'audit_events.id > s.event_id';
    return q.where('at', '<', c.auditBefore!).whereNotExists(db('event_sinks as s').select(db.raw('1')).whereRaw(past));
  }
  return q.where('expires_at', '<', c.now);
}

export const purgeQueries = ({ knex: db }: Database) => ({
  /** The lists' row counts, kept by a row per writing statement on PostgreSQL, folded (src/db/row-counts.ts). */
  foldRowCounts: () => foldRowCounts(db),

  /** Deletes at most `limit` dead rows of `table`; how many it deleted. */
  async deleteBatch(table: PurgedTable, c: Cutoffs, limit: number): Promise<number> {
    const q = db(table).whereIn(keyOf[table], dead(db, table, c).limit(limit));
    // Two clients may pick the same jti: only the expired one of them goes.
    if (table === 'client_assertion_jtis' || table === 'saml_session_participants') q.andWhere('expires_at', '<', c.now);
    return q.delete();
  },

  /**
   * Takes the lease `name` until `until` if nobody holds it (or `holder` does already): one atomic
   * upsert, so of several processes asking at once exactly one gets it.
   */
  async takeLease(name: string, holder: string, now: number, until: number): Promise<boolean> {
    const rows = (await db('maintenance_leases')
      .insert({ name, holder, expires_at: until })
      .onConflict('name')
      .merge(['holder', 'expires_at'])
      .where('maintenance_leases.expires_at', '<=', now)
      .orWhere('maintenance_leases.holder', holder)
      .returning('holder')) as unknown[];
    return rows.length > 0;
  },
});

export type PurgeQueries = ReturnType<typeof purgeQueries>;
