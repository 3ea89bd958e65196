import type { Client } from './model.ts';
import type { User } from '../users/model.ts';
import { oauthError } from '../errors/oauth.ts';

/**
 * docs/admin-api.md: the scope that carries a user's admin rights to the admin API. Only the built-in admin
 * clients and clients registered with this scope can hold it, so an application a user signs in to
 * never holds that user's admin rights.
 */
export const ADMIN_SCOPE = 'admin';
export const ADMIN_CLIENTS: ReadonlySet<string> = new Set(['admin-cli', 'admin-console']);

/** OIDC Core 11: asks for a refresh token; stock libraries (MSAL, Auth0's SDKs) send it on their own. */
export const OFFLINE_ACCESS = 'offline_access';

const mayRefresh = (client: Pick<Client, 'grantTypes'>) => client.grantTypes.includes('refresh_token');

/** What a client may ask for: its registered scopes, and offline_access whenever it may refresh (docs/connect-an-application.md). */
export const scopesAllowed = (client: Pick<Client, 'grantTypes' | 'scopes'>): string[] =>
  mayRefresh(client) && !client.scopes.includes(OFFLINE_ACCESS) ? [...client.scopes, OFFLINE_ACCESS] : client.scopes;

/**
 * offline_access from a client without the refresh grant is dropped, not refused: OIDC Core 11 lets
 * the server ignore it, and a library that always sends it then still signs the user in.
 */
export const withoutIgnoredScopes = (scopes: string[], client: Pick<Client, 'grantTypes'>): string[] =>
  mayRefresh(client) ? scopes : scopes.filter((s) => s !== OFFLINE_ACCESS);

/** The scopes asked for, each allowed by `allowed`; none asked means `fallback`. */
export function requestedScopes(scope: string | undefined, allowed: string[], fallback: string[]): string[] {
  if (!scope) return fallback;
  const scopes = [...new Set(scope.split(' ').filter(Boolean))];
  const refused = scopes.filter((s) => !allowed.includes(s));
  if (refused.length > 0) throw oauthError('invalid_scope', `scope not allowed: ${refused.join(' ')}`);
  return scopes;
}

/** A user grant's scopes at the token endpoint: asked for (offline_access as above), or the client's own. */
export const clientScopes = (scope: string | undefined, client: Pick<Client, 'grantTypes' | 'scopes'>): string[] =>
  requestedScopes(scope && withoutIgnoredScopes(scope.split(' '), client).join(' '), scopesAllowed(client), client.scopes);

/**
 * What a user may be granted of `scopes`: the admin scope only for a user with a role. A user's
 * roles are admin roles (docs/admin-api.md "Roles and permissions": built-in or custom, which only
 * the database knows), so any role will do here; the admin API then checks what the roles give. It
 * is dropped rather than refused, since the admin clients ask for it by default and any user may
 * sign in to them.
 */
export const grantableScopes = (scopes: string[], user: Pick<User, 'roles'>): string[] =>
  user.roles.length > 0 ? scopes : scopes.filter((s) => s !== ADMIN_SCOPE);
