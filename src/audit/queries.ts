import type { Database } from '../db/database.ts';
import { statement, type Step } from '../db/statements.ts';
import { paginate, type Page, type PageRequest } from '../db/pagination.ts';
import { num } from '../db/rows.ts';
import type { AuditEvent } from './model.ts';
import type { AuditKind } from './model.ts';

/** A recorded event as the admin API shows it. */
export interface StoredAuditEvent {
  id: string;
  at: number;
  kind: string;
  userId: string | null;
  clientId: string | null;
  actorUserId: string | null;
  actorClientId: string | null;
  ip: string | null;
  requestId: string | null;
  details: string | null;
}

const toEvent = (r: Record<string, unknown>): StoredAuditEvent => ({
  id: String(r.id),
  at: num(r.at),
  kind: String(r.kind),
  userId: (r.user_id as string | null) ?? null,
  clientId: (r.client_id as string | null) ?? null,
  actorUserId: (r.actor_user_id as string | null) ?? null,
  actorClientId: (r.actor_client_id as string | null) ?? null,
  ip: (r.ip as string | null) ?? null,
  requestId: (r.request_id as string | null) ?? null,
  details: (r.details as string | null) ?? null,
});

const insertSql = statement(
  'insert into audit_events (at, kind, user_id, client_id, actor_user_id, actor_client_id, ip, request_id, details) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
);

// A summary event (a client's token issues in one minute) has no request: `request_id is null` tells it
// from the per-request events of the same kind. `at` leads, so the lookup uses the (at, id) index.
const findSummarySql = statement('select id, details from audit_events where at = ? and kind = ? and client_id = ? and request_id is null');
// A summary another process added to goes out again (docs/decisions.md "Events out"): a copy with the
// new details takes a new place at the end of the stream, and the old row goes, both or neither.
const copyWithDetailsSql = statement(
  'insert into audit_events (at, kind, user_id, client_id, actor_user_id, actor_client_id, ip, request_id, details) select at, kind, user_id, client_id, actor_user_id, actor_client_id, ip, request_id, ? from audit_events where id = ? and details = ?',
);
const deleteIfDetailsSql = statement('delete from audit_events where id = ? and details = ?');

/**
 * The write of one event, as a step of another job: an event that must commit with what it tells of
 * (a token issue) rides in that job's transaction instead of a group commit of its own.
 */
export function insertStep(e: AuditEvent, at: number): Step {
  const params = [at, e.kind, e.userId, e.clientId, e.actorUserId, e.actorClientId, e.ip, e.requestId].map((v) => v ?? null);
  return { stmt: insertSql, params: [...params, e.details ? JSON.stringify(e.details) : null] };
}

export const auditQueries = ({ knex: db, fast }: Database) => ({
  async insert(e: AuditEvent, at: number): Promise<void> {
    await fast.groupCommit([insertStep(e, at)]);
  },

  /** The summary event of `kind` for `clientId` at `at`, with its details as stored. */
  async findSummary(at: number, kind: AuditKind, clientId: string): Promise<{ id: string; details: string } | undefined> {
    const row = await fast.get(findSummarySql, [at, kind, clientId]);
    return row ? { id: String(row.id), details: String(row.details) } : undefined;
  },

  /**
   * Compare-and-set of an event's details: false when another process changed them first. The event
   * is written anew (a new id, the end of the stream of events going out), so that the sinks that
   * sent it already are sent the new count too.
   */
  async replaceDetails(id: string, from: string, to: string): Promise<boolean> {
    const done = await fast.transaction([
      { stmt: copyWithDetailsSql, params: [to, id, from], expectRows: 1 },
      { stmt: deleteIfDetailsSql, params: [id, from], expectRows: 1 },
    ]);
    return done !== null;
  },

  /** Newest first, optionally of one kind, user or client. */
  page(req: PageRequest & { kind?: string | null; userId?: string | null; clientId?: string | null }): Promise<Page<StoredAuditEvent>> {
    const q = db('audit_events').select('*');
    if (req.kind) q.where('kind', req.kind);
    if (req.userId) q.where('user_id', req.userId);
    if (req.clientId) q.where('client_id', req.clientId);
    return paginate(q, { ...req, timeColumn: 'at', keyColumn: 'id', direction: 'desc' }, toEvent);
  },
});

export type AuditQueries = ReturnType<typeof auditQueries>;
