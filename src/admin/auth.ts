import type { Request } from 'express';
import { GraphQLError } from 'graphql';
import type { AppContext } from '../context.ts';
import { ADMIN_CLIENTS, ADMIN_SCOPE } from '../clients/scopes.ts';
import type { BearerRefusal } from '../tokens/service.ts';
import { ADMIN_ROLE, type AdminGrant } from '../admin-roles/model.ts';
import { forbidden } from './errors.ts';

/** Who is calling the admin API: a user with an admin role, or a client (service account) with the admin role. */
export interface Admin {
  userId: string | null;
  /** The user's username; null for a client. */
  username: string | null;
  clientId: string;
  /** The SSO session the caller's token came from: a change the admin makes to themselves keeps it. */
  sessionId: string | null;
  /** What the caller's roles give (docs/admin-api.md "Roles and permissions"). */
  grant: AdminGrant;
}

const unauthenticated = (message: string) =>
  new GraphQLError(message, {
    extensions: { code: 'UNAUTHENTICATED', http: { status: 401, headers: new Map([['www-authenticate', 'Bearer realm="latchkey"']]) } },
  });

/** Why a token is no good, in the admin API's words: each is UNAUTHENTICATED (401). */
const refusals: Record<BearerRefusal, string> = {
  unknown: 'the access token is invalid or expired',
  expired: 'the access token is invalid or expired',
  user_gone: 'the access token belongs to a user who no longer exists',
  user_disabled: 'the access token belongs to a disabled user',
  oauth_disabled: 'the access token belongs to an application that may not use OAuth',
};

/**
 * docs/admin-api.md / 7: no valid token is UNAUTHENTICATED (401). A user's token must come from an admin
 * client (`admin-cli`, `admin-console`, or one registered with the `admin` scope), carry the `admin`
 * scope, and belong to a user with an admin role (built-in or custom: what each operation needs is
 * checked per field, permissions.ts); a client_credentials token needs a client with the admin role
 * (it acts for itself, with that role). Anything else is FORBIDDEN (403).
 */
export async function authenticateAdmin(ctx: AppContext, req: Request): Promise<Admin> {
  const header = req.headers.authorization;
  if (!header || !/^bearer /i.test(header)) throw unauthenticated('an admin access token is required (Authorization: Bearer …)');
  // The token service decides whether the token is good, as it does for /me and introspection.
  const bearer = await ctx.tokens.authenticate(header.slice(7).trim());
  if (!bearer.ok) throw unauthenticated(refusals[bearer.refusal]);
  const { grant } = bearer;
  const { clientId, user } = grant;
  if (!user) {
    if (!grant.client.roles.includes(ADMIN_ROLE)) throw forbidden('the admin role is required');
    return { userId: null, username: null, clientId, sessionId: null, grant: await ctx.adminRoles.grant(null, [ADMIN_ROLE]) };
  }
  const rights = await ctx.adminRoles.grant(user.id, user.roles);
  if (rights.roles.length === 0) throw forbidden('an admin role is required (admin, helpdesk, auditor, app-owner or a custom one)');
  const adminClient = ADMIN_CLIENTS.has(clientId) || grant.client.scopes.includes(ADMIN_SCOPE);
  if (!adminClient || !grant.scopes.includes(ADMIN_SCOPE)) {
    throw forbidden(
      `this token was not issued for the admin API: use admin-cli or a client with the ${ADMIN_SCOPE} scope, and request that scope`,
    );
  }
  return { userId: user.id, username: user.username, clientId, sessionId: grant.sessionId, grant: rights };
}
