import { InputError } from '../errors/service.ts';
import type { PasswordRefusal, PasswordWrite } from '../identity/contract.ts';

/**
 * Words for a directory's refusal of a new password (docs/identity-backends.md): the one source of them, used by the
 * backends (plugins/ldap) and for a refusal whose backend gave no words of its own.
 */
export const REFUSAL_WORDS: Readonly<Record<PasswordRefusal, string>> = {
  wrong_password: 'The current password is not right.',
  too_short: 'The new password is too short.',
  in_history: 'The new password was used before. Choose one you have not used.',
  too_young: 'The password was changed too recently to change it again now.',
  complexity: 'The new password does not meet the complexity rules.',
  refused: 'The directory refused the new password.',
};

/** What the user is told for a refused write: the backend's own words, else ours for its reason. */
export const refusalWords = (refused: Extract<PasswordWrite, { ok: false }>): string =>
  refused.message.trim() || REFUSAL_WORDS[refused.refusal] || REFUSAL_WORDS.refused;

/** The longest new password Latchkey takes, a database user's or a directory user's. */
export const MAX_PASSWORD = 1024;

/**
 * Latchkey's own rule for a directory user's new password, however it is written (changed by the
 * user, reset by mail or by an admin): 1 to `MAX_PASSWORD` characters; the directory's policy decides the rest.
 */
export const directoryPasswordFits = (password: string): boolean => password.length >= 1 && password.length <= MAX_PASSWORD;

/**
 * A new password refused (the directory's policy, or Latchkey's own length rule): an `InputError` of
 * the field `password` for GraphQL and the CLI, with `words` for a page to show as they are.
 */
export class PasswordRefused extends InputError {
  constructor(readonly words: string) {
    super('password', words);
  }
}
