import type { Logger } from 'pino';
import type { Db } from '../db/connect.ts';
import { isDatabaseUnavailable, type DatabaseOutage } from '../db/outage.ts';

export interface AuditEvent {
  kind:
    | 'login.success'
    | 'login.failure'
    | 'login.throttled'
    | 'token.issued'
    | 'token.revoked'
    | 'token.reuse_detected'
    | 'code.replayed'
    | 'consent.granted'
    | 'logout'
    | 'admin.change';
  userId?: string | null;
  clientId?: string | null;
  actorUserId?: string | null;
  actorClientId?: string | null;
  ip?: string | null;
  requestId?: string | null;
  details?: Record<string, unknown>;
}

/** Writes the audit trail. A failed write is logged, never turned into a failed sign-in. */
export const auditLog = (db: Db, logger: Logger, outage?: DatabaseOutage) => ({
  async record(e: AuditEvent): Promise<void> {
    try {
      await db('audit_events').insert({
        at: Date.now(),
        kind: e.kind,
        user_id: e.userId ?? null,
        client_id: e.clientId ?? null,
        actor_user_id: e.actorUserId ?? null,
        actor_client_id: e.actorClientId ?? null,
        ip: e.ip ?? null,
        request_id: e.requestId ?? null,
        details: e.details ? JSON.stringify(e.details) : null,
      });
    } catch (err) {
      if (outage && isDatabaseUnavailable(err)) return outage.report(err, e.requestId ?? undefined);
      logger.error({ err, event: e.kind, requestId: e.requestId }, 'audit event not recorded');
    }
  },
});

export type AuditLog = ReturnType<typeof auditLog>;
