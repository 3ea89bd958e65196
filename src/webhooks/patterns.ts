import { InputError } from '../errors/service.ts';

/** `*`, a kind (`login.failure`), or a kind's first part and `.*` (`user.*`). */
const PATTERN = /^(\*|[a-z][a-z_]*(\.[a-z][a-z_]*)*(\.\*)?)$/;
const MAX_PATTERNS = 50;

/** The kind patterns of a registration, checked and without repeats; BAD_USER_INPUT naming `events` otherwise. */
export function checkPatterns(patterns: readonly string[]): string[] {
  const trimmed = [...new Set(patterns.map((p) => p.trim()))];
  if (trimmed.length === 0) throw new InputError('events', 'name at least one kind of event, such as "user.*", "login.failure" or "*"');
  if (trimmed.length > MAX_PATTERNS) throw new InputError('events', `at most ${MAX_PATTERNS} patterns`);
  for (const p of trimmed) {
    if (p.length > 64 || !PATTERN.test(p)) {
      throw new InputError('events', `${JSON.stringify(p)} is not a kind pattern: "*", a kind such as "login.failure", or "user.*"`);
    }
  }
  return trimmed;
}

/** Whether an event of `kind` is one the patterns ask for: `*` every kind, `user.*` the kinds starting `user.`. */
export function kindMatches(patterns: readonly string[], kind: string): boolean {
  return patterns.some((p) => p === '*' || p === kind || (p.endsWith('.*') && kind.startsWith(p.slice(0, -1))));
}
