import type { Logger } from 'pino';
import { isDatabaseUnavailable, type DatabaseOutage } from '../db/outage.ts';
import type { AuditQueries } from './queries.ts';
import type { AuditEvent } from './model.ts';
import type { AdminGrant } from '../admin-roles/model.ts';
import { clock } from '../clock.ts';

/** Who made an admin change: a user through an admin token, a service account, the CLI or the server itself. */
export interface Actor {
  userId: string | null;
  clientId: string | null;
  /** `account`: users changing their own account at /account; `password_reset`: a user through a reset link. */
  /** `scim`: a SCIM client (docs/scim-provisioning.md), its token in the event's details. */
  via: 'graphql' | 'cli' | 'system' | 'account' | 'password_reset' | 'scim';
  ip?: string | null;
  requestId?: string | null;
  /** The SSO session the change was made from, if any: a change to one's own credentials keeps it. */
  sessionId?: string | null;
  /**
   * An admin API caller's rights (docs/admin-api.md "Roles and permissions"): the services judge a role
   * or right given by it (no escalation). Absent for the CLI and the server itself, which hold every one.
   */
  grant?: AdminGrant;
  /** The permission the act was allowed by, and the role that gave it: every admin change records both. */
  permission?: string | null;
  role?: string | null;
}

/** The operator at the shell (`npm run latchkey`). */
export const CLI_ACTOR: Actor = { userId: null, clientId: null, via: 'cli' };
/** The server's own changes: the first admin, a scheduled key rotation. */
export const SYSTEM_ACTOR: Actor = { userId: null, clientId: null, via: 'system' };

/**
 * Writes the audit trail. Outside a transaction a failed write is logged, never turned into a failed
 * sign-in; inside one (`strict`: an admin change and its event commit together) it fails the change.
 */
export const auditLog = (queries: AuditQueries, logger: Logger, outage: DatabaseOutage, strict = false) => ({
  async record(e: AuditEvent): Promise<void> {
    try {
      await queries.insert(e, clock.now());
    } catch (err) {
      if (strict) throw err;
      if (isDatabaseUnavailable(err)) return outage.report(err, e.requestId ?? undefined);
      logger.error({ err, event: e.kind, requestId: e.requestId }, 'audit event not recorded');
    }
  },

  /** An admin change (`action`, e.g. `user.update`) by `actor`. */
  change(
    action: string,
    actor: Actor,
    target: Pick<AuditEvent, 'userId' | 'clientId'> = {},
    details: Record<string, unknown> = {},
  ): Promise<void> {
    return this.record({
      kind: 'admin.change',
      ...target,
      actorUserId: actor.userId,
      actorClientId: actor.clientId,
      ip: actor.ip,
      requestId: actor.requestId,
      details: {
        action,
        via: actor.via,
        ...(actor.permission ? { permission: actor.permission, role: actor.role ?? null } : {}),
        ...details,
      },
    });
  },

  page: queries.page,
});

export type AuditLog = ReturnType<typeof auditLog>;
