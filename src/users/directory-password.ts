import type { Logger } from 'pino';
import type { Origin } from '../audit/model.ts';
import type { Actor, AuditLog } from '../audit/record.ts';
import type { Transaction } from '../db/transaction.ts';
import { BackendUnavailableError, type PasswordRefusal, type PasswordWrite } from '../identity/contract.ts';
import type { SessionStore } from '../login/sessions.ts';
import type { User } from './model.ts';
import type { IdentityChain } from '../identity/chain.ts';
import { directoryPasswordFits, refusalWords } from './password-refusals.ts';

/** The identity chain's password writes, for users of a directory whose backend allows them (docs/identity-backends.md). */
export type DirectoryPasswords = Pick<IdentityChain, 'canWritePassword' | 'writePassword'>;

/** Where a user changes their own directory password: the account page, or the sign-in the directory stopped for it. */
export type DirectoryChangeVia = 'account' | 'sign_in';

/**
 * How a user's change of their directory password ended. `length`: outside what any directory takes
 * (`directoryPasswordFits`, 1 to `MAX_PASSWORD` characters); `not_allowed`: the backend lets no one change it here; `unavailable`:
 * the directory could not be reached; `refused`: its policy said no, in `words` (the backend's, else
 * `REFUSAL_WORDS`). Nothing is changed unless `ok`.
 */
export type DirectoryPasswordChange =
  | { ok: true }
  | { ok: false; reason: 'length' | 'not_allowed' | 'unavailable' }
  | { ok: false; reason: 'refused'; refusal: PasswordRefusal; words: string };

/** What the change needs of a transaction: the sessions it ends and the event that goes with them. */
interface ChangeTransaction {
  sessions: Pick<SessionStore, 'endAllOf'>;
  audit: Pick<AuditLog, 'record'>;
}

/**
 * A user changes their directory password, bound as themselves (docs/identity-backends.md): at the
 * account page, or at sign-in when the directory says it expired or must change. The directory's
 * policy decides; a refusal changes nothing; an outage writes nothing. Each change, refusal and
 * failure is an audit event; a change ends every other session and token of the user
 * (docs/decisions.md) in the transaction of its `account.password_changed` event (the directory's
 * write cannot join it, so it comes first).
 */
export const directoryPasswordChanges = (deps: {
  directory?: DirectoryPasswords;
  audit: Pick<AuditLog, 'record'>;
  logger?: Logger;
  transaction: Transaction<ChangeTransaction>;
}) => ({
  /**
   * `keep`: the session that made the change (at /account), which stays; at sign-in none does (the
   * sign-in then goes on with the new password).
   */
  async changeDirectoryPassword(
    user: User,
    change: { oldPassword: string; newPassword: string; via: DirectoryChangeVia; keep?: string },
    origin: Origin,
  ): Promise<DirectoryPasswordChange> {
    const event = { userId: user.id, ip: origin.ip, requestId: origin.requestId };
    const details = { backend: user.backend, via: change.via };
    if (!directoryPasswordFits(change.newPassword)) return { ok: false, reason: 'length' };
    let written: PasswordWrite | undefined;
    try {
      written = await deps.directory?.writePassword(user, {
        how: 'change',
        oldPassword: change.oldPassword,
        newPassword: change.newPassword,
      });
    } catch (err) {
      if (!(err instanceof BackendUnavailableError)) throw err;
      deps.logger?.warn(
        { requestId: origin.requestId, backend: user.backend, err: err.message },
        'directory unavailable during a password change',
      );
      await deps.audit.record({ kind: 'account.password_change_failed', ...event, details: { ...details, reason: 'unavailable' } });
      return { ok: false, reason: 'unavailable' };
    }
    if (!written) return { ok: false, reason: 'not_allowed' };
    if (!written.ok) {
      await deps.audit.record({ kind: 'account.password_change_refused', ...event, details: { ...details, refusal: written.refusal } });
      return { ok: false, reason: 'refused', refusal: written.refusal, words: refusalWords(written) };
    }
    const actor: Actor = { userId: user.id, clientId: null, via: 'account', ip: origin.ip, requestId: origin.requestId };
    await deps.transaction(async (tx) => {
      await tx.audit.record({ kind: 'account.password_changed', ...event, details });
      await tx.sessions.endAllOf(user.id, { except: change.keep, actor });
    });
    return { ok: true };
  },

  /**
   * The change could not start: the directory was unreachable when the current password was checked
   * (as a counted sign-in, before the write). Audited and answered as an outage during the write is.
   */
  async directoryPasswordUnreachable(user: User, via: DirectoryChangeVia, origin: Origin): Promise<DirectoryPasswordChange> {
    const details = { backend: user.backend, via, reason: 'unavailable' };
    await deps.audit.record({
      kind: 'account.password_change_failed',
      userId: user.id,
      ip: origin.ip,
      requestId: origin.requestId,
      details,
    });
    return { ok: false, reason: 'unavailable' };
  },
});
