import type { User } from '../../users/queries.ts';
import { oauthError } from '../../errors/oauth.ts';

/**
 * SPEC 3: the scope that carries a user's admin rights to the admin API. Only the built-in admin
 * clients and clients registered with this scope can hold it, so an application a user signs in to
 * never holds that user's admin rights.
 */
export const ADMIN_SCOPE = 'admin';
export const ADMIN_CLIENTS: ReadonlySet<string> = new Set(['admin-cli', 'admin-console']);

/** The scopes asked for, each allowed by `allowed`; none asked means `fallback`. */
export function requestedScopes(scope: string | undefined, allowed: string[], fallback: string[]): string[] {
  if (!scope) return fallback;
  const scopes = [...new Set(scope.split(' ').filter(Boolean))];
  const refused = scopes.filter((s) => !allowed.includes(s));
  if (refused.length > 0) throw oauthError('invalid_scope', `scope not allowed: ${refused.join(' ')}`);
  return scopes;
}

/**
 * What a user may be granted of `scopes`: the admin scope only for a user with the admin role. It
 * is dropped rather than refused, since the admin clients ask for it by default and any user may
 * sign in to them.
 */
export const grantableScopes = (scopes: string[], user: Pick<User, 'roles'>): string[] =>
  user.roles.includes('admin') ? scopes : scopes.filter((s) => s !== ADMIN_SCOPE);
