import { MAX_PASSWORD } from '../users/password-refusals.ts';
import type { DirectoryPasswordChange } from '../users/service.ts';

/** How a change of a directory password ended, as a page tells it. */
export type DirectoryChange = { ok: true } | { ok: false; status: number; message: string; wrongPassword?: boolean };

const UNCHANGED = 'Your password is unchanged.';

/**
 * The page's status and words for the users service's answer to a change of a directory password
 * (`users.changeDirectoryPassword`, docs/identity-backends.md): at the account page, or at sign-in when the directory
 * says it expired or must change. A refusal is told in the directory's words (the backend's, else
 * `REFUSAL_WORDS`), and that nothing changed; an outage is a 503.
 */
export function directoryChangeAnswer(outcome: DirectoryPasswordChange): DirectoryChange {
  if (outcome.ok) return outcome;
  switch (outcome.reason) {
    case 'length':
      return { ok: false, status: 400, message: `The new password must be 1 to ${MAX_PASSWORD} characters. ${UNCHANGED}` };
    case 'unavailable':
      return {
        ok: false,
        status: 503,
        message: 'The directory is unreachable right now. Your password is unchanged; please try again shortly.',
      };
    case 'not_allowed':
      return { ok: false, status: 400, message: 'Your directory does not let you change your password here.' };
    case 'refused': {
      const wrongPassword = outcome.refusal === 'wrong_password';
      const { words } = outcome;
      return {
        ok: false,
        status: wrongPassword ? 401 : 400,
        message: `${words}${/[.!?]$/.test(words) ? '' : '.'} ${UNCHANGED}`,
        wrongPassword,
      };
    }
  }
}
