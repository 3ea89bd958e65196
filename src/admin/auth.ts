import type { Request } from 'express';
import { GraphQLError } from 'graphql';
import type { AppContext } from '../context.ts';
import { bool, json, num } from '../db/rows.ts';

/** Who is calling the admin API: an admin user, or a client (service account) with the admin role. */
export interface Admin {
  userId: string | null;
  clientId: string;
}

const unauthenticated = (message: string) =>
  new GraphQLError(message, { extensions: { code: 'UNAUTHENTICATED', http: { status: 401, headers: new Map([['www-authenticate', 'Bearer realm="latchkey"']]) } } });

/** SPEC 3 / 7: no valid token is UNAUTHENTICATED (401); a token without the admin role FORBIDDEN (403). */
export async function authenticateAdmin(ctx: AppContext, req: Request): Promise<Admin> {
  const header = req.headers.authorization;
  if (!header || !/^bearer /i.test(header)) throw unauthenticated('an admin access token is required (Authorization: Bearer …)');
  const row = await ctx.tokens.findAccess(header.slice(7).trim());
  if (!row || num(row.expires_at) <= Date.now()) throw unauthenticated('the access token is invalid or expired');
  const roles = row.user_id ? json<string[]>(row.roles, []) : json<string[]>(row.client_roles, []);
  if ((row.user_id && bool(row.disabled)) || !roles.includes('admin')) {
    throw new GraphQLError('the admin role is required', { extensions: { code: 'FORBIDDEN', http: { status: 403 } } });
  }
  return { userId: (row.user_id as string | null) ?? null, clientId: String(row.client_id) };
}
