/**
 * Leavers and returners (docs/directory-sync.md, "What happens when someone leaves"): a user
 * whom the directory or a SCIM client no longer lets in is deprovisioned, and one shown enabled again
 * comes back. Both are acts of this service, finished here with their audit events, in one transaction
 * with the change: the record, every session (through the one session-end funnel, which refuses the
 * codes, revokes the tokens and queues the applications' logout notices) and the reset links.
 */
import type { AuditLog } from '../audit/record.ts';
import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import type { Transaction } from '../db/transaction.ts';
import type { SessionStore } from '../login/sessions.ts';
import type { ResetQueries } from '../password-reset/reset-queries.ts';
import type { User } from './model.ts';
import type { UserQueries } from './queries.ts';

/**
 * Why a user is deprovisioned, as `user.deprovisioned` names it. A directory cannot tell a deleted entry
 * from one moved out of the base or excluded by the filter: all three are `not_found`.
 */
export type LeaveReason = 'disabled' | 'expired' | 'not_found' | 'inactive' | 'deleted';

export const LEAVE_REASONS: readonly LeaveReason[] = ['disabled', 'expired', 'not_found', 'inactive', 'deleted'];

export interface LeaverTransaction {
  queries: { users: UserQueries; resets: Pick<ResetQueries, 'discardAllOf'> };
  sessions: Pick<SessionStore, 'endAllOf'>;
  audit: Pick<AuditLog, 'record'>;
}

export const leavers = (transaction: Transaction<LeaverTransaction>) => ({
  /**
   * Disables the record (`disabledBy: directory`) and ends everything it holds. False when there was
   * nothing to do: the user is gone, or already disabled (by anyone: an administrator's disabling stays
   * theirs).
   */
  deprovision(userId: string, o: { backend: string; reason: LeaveReason; origin?: Origin }): Promise<boolean> {
    return transaction(async (tx) => {
      // Only the state, and only from enabled (a gone or disabled user is left alone): an administrator's
      // disabling or roles committed since a pass read the record stay theirs.
      const to = { disabled: true, disabledBy: 'directory', updatedAt: clock.now() } as const;
      if (!(await tx.queries.users.moveState(userId, { disabled: false }, to))) return false;
      const ended = await tx.sessions.endAllOf(userId, {});
      // A reset link outlives no disabling (docs/decisions.md "Reset links and the admin's remedies").
      await tx.queries.resets.discardAllOf(userId);
      await tx.audit.record({
        kind: 'user.deprovisioned',
        userId,
        ip: o.origin?.ip,
        requestId: o.origin?.requestId,
        details: { backend: o.backend, reason: o.reason, sessions: ended.sessions, tokens: ended.tokens },
      });
      return true;
    });
  },

  /** Enables a record the directory disabled, now that it shows the user enabled. False when there was nothing to do. */
  reenable(userId: string, o: { backend: string; origin?: Origin }): Promise<User | undefined> {
    return transaction(async (tx) => {
      const user = await tx.queries.users.find(userId);
      if (!user?.disabled || user.disabledBy !== 'directory') return undefined;
      const next: User = { ...user, disabled: false, disabledBy: null, updatedAt: clock.now() };
      // Only from a directory's disabling: an administrator's, committed since the read, is never undone.
      if (!(await tx.queries.users.moveState(userId, { disabled: true, disabledBy: 'directory' }, next))) return undefined;
      await tx.audit.record({
        kind: 'user.reenabled',
        userId,
        ip: o.origin?.ip,
        requestId: o.origin?.requestId,
        details: { backend: o.backend },
      });
      return next;
    });
  },
});

export type Leavers = ReturnType<typeof leavers>;
