import { oauthError } from '../errors.ts';

/** The scopes asked for, each allowed by `allowed`; none asked means `fallback`. */
export function requestedScopes(scope: string | undefined, allowed: string[], fallback: string[]): string[] {
  if (!scope) return fallback;
  const scopes = [...new Set(scope.split(' ').filter(Boolean))];
  const refused = scopes.filter((s) => !allowed.includes(s));
  if (refused.length > 0) throw oauthError('invalid_scope', `scope not allowed: ${refused.join(' ')}`);
  return scopes;
}
