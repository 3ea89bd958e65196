import type { Request } from 'express';
import type { AppContext } from '../context.ts';
import { BackendUnavailableError, type PasswordRefusal } from '../identity/contract.ts';
import type { User } from '../users/model.ts';

/** How a change of a directory password ended, as a page tells it. */
export type DirectoryChange = { ok: true } | { ok: false; status: number; message: string; wrongPassword?: boolean };

/** The words of a refusal whose backend gave none. */
const refusalWords: Record<PasswordRefusal, string> = {
  wrong_password: 'Your current password is not right.',
  too_short: 'The new password is too short for your directory.',
  in_history: 'The new password was used before: choose one you have not used.',
  too_young: 'Your password was changed too recently to change it again yet.',
  complexity: 'The new password is not complex enough for your directory.',
  refused: 'Your directory refused the new password.',
};

/** As for local passwords (users/service.ts): the directory's own policy decides the rest. */
const MAX_PASSWORD = 1024;

/**
 * A user changes their directory password, bound as themselves (docs/identity-backends.md): at the account page, or at
 * sign-in when the directory says it expired or must change. The directory's policy decides; its
 * refusal is told in the backend's words and nothing is changed; an outage is a 503 and nothing is
 * written. Each change, refusal and failure is an audit event.
 */
export async function changeDirectoryPassword(
  ctx: AppContext,
  req: Request,
  user: User,
  change: { oldPassword: string; newPassword: string; via: 'account' | 'sign_in' },
): Promise<DirectoryChange> {
  const event = { userId: user.id, ip: req.ip, requestId: req.id };
  const details = { backend: user.backend, via: change.via };
  if (change.newPassword.length < 1 || change.newPassword.length > MAX_PASSWORD) {
    return { ok: false, status: 400, message: `The new password must be 1 to ${MAX_PASSWORD} characters. Your password is unchanged.` };
  }
  let written;
  try {
    written = await ctx.identity.writePassword(user, { how: 'change', oldPassword: change.oldPassword, newPassword: change.newPassword });
  } catch (err) {
    if (!(err instanceof BackendUnavailableError)) throw err;
    ctx.logger.warn({ requestId: req.id, backend: user.backend, err: err.message }, 'directory unavailable during a password change');
    await ctx.audit.record({ kind: 'account.password_change_failed', ...event, details: { ...details, reason: 'unavailable' } });
    return { ok: false, status: 503, message: 'The directory is unreachable right now. Your password is unchanged; please try again shortly.' };
  }
  if (!written) return { ok: false, status: 400, message: 'Your directory does not let you change your password here.' };
  if (!written.ok) {
    await ctx.audit.record({ kind: 'account.password_change_refused', ...event, details: { ...details, refusal: written.refusal } });
    const wrongPassword = written.refusal === 'wrong_password';
    const words = written.message.trim() || refusalWords[written.refusal] || refusalWords.refused;
    return { ok: false, status: wrongPassword ? 401 : 400, message: `${words}${/[.!?]$/.test(words) ? '' : '.'} Your password is unchanged.`, wrongPassword };
  }
  await ctx.audit.record({ kind: 'account.password_changed', ...event, details });
  return { ok: true };
}
