import type { Request } from 'express';
import { GraphQLError } from 'graphql';
import type { AppContext } from '../context.ts';
import { ADMIN_CLIENTS, ADMIN_SCOPE } from '../oauth/token/scopes.ts';
import { clock } from '../clock.ts';

/** Who is calling the admin API: an admin user, or a client (service account) with the admin role. */
export interface Admin {
  userId: string | null;
  clientId: string;
  /** The SSO session the caller's token came from: a change the admin makes to themselves keeps it. */
  sessionId: string | null;
}

const unauthenticated = (message: string) =>
  new GraphQLError(message, { extensions: { code: 'UNAUTHENTICATED', http: { status: 401, headers: new Map([['www-authenticate', 'Bearer realm="latchkey"']]) } } });

const forbidden = (message: string) => new GraphQLError(message, { extensions: { code: 'FORBIDDEN', http: { status: 403 } } });

/**
 * SPEC 3 / 7: no valid token is UNAUTHENTICATED (401). A user's token must come from an admin
 * client (`admin-cli`, `admin-console`, or one registered with the `admin` scope), carry the `admin`
 * scope, and belong to an enabled user with the admin role; a client_credentials token needs a
 * client with the admin role (it acts for itself). Anything else is FORBIDDEN (403).
 */
export async function authenticateAdmin(ctx: AppContext, req: Request): Promise<Admin> {
  const header = req.headers.authorization;
  if (!header || !/^bearer /i.test(header)) throw unauthenticated('an admin access token is required (Authorization: Bearer …)');
  const grant = await ctx.tokens.findAccess(header.slice(7).trim());
  if (!grant || grant.expiresAt <= clock.now()) throw unauthenticated('the access token is invalid or expired');
  const { clientId, user } = grant;
  if (grant.userId && !user) throw unauthenticated('the access token belongs to a user who no longer exists');
  if (!user) {
    if (!grant.client.roles.includes('admin')) throw forbidden('the admin role is required');
    return { userId: null, clientId, sessionId: null };
  }
  if (user.disabled || !user.roles.includes('admin')) throw forbidden('the admin role is required');
  const adminClient = ADMIN_CLIENTS.has(clientId) || grant.client.scopes.includes(ADMIN_SCOPE);
  if (!adminClient || !grant.scopes.includes(ADMIN_SCOPE)) {
    throw forbidden(`this token was not issued for the admin API: use admin-cli or a client with the ${ADMIN_SCOPE} scope, and request that scope`);
  }
  return { userId: user.id, clientId, sessionId: grant.sessionId };
}
