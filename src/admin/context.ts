import type { Request } from 'express';
import type { AdminGrant } from '../admin-roles/model.ts';
import type { Actor } from '../audit/record.ts';
import type { AppContext } from '../context.ts';
import type { Admin } from './auth.ts';

/** What every resolver gets: the app's services, and the caller as the actor of any change. */
export interface AdminContext {
  app: AppContext;
  admin: Admin;
  /** The caller's admin roles and permissions (docs/admin-api.md "Roles and permissions"). */
  grant: AdminGrant;
  /** The actor of any change: the caller, and (set by the permission check) the permission and role it acts with. */
  actor: Actor;
  requestId: string;
  /**
   * Set by the permission check on a list (`clients`, `samlServiceProviders`) that an owner without
   * `apps:read` reads: only the applications this user owns.
   */
  ownedBy?: string;
}

export function adminContext(app: AppContext, admin: Admin, req: Request): AdminContext {
  return {
    app,
    admin,
    grant: admin.grant,
    actor: {
      userId: admin.userId,
      clientId: admin.clientId,
      via: 'graphql',
      ip: req.ip ?? null,
      requestId: req.id,
      sessionId: admin.sessionId,
      grant: admin.grant,
    },
    requestId: req.id,
  };
}
