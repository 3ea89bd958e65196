import type { Request } from 'express';
import type { Actor } from '../audit/record.ts';
import type { AppContext } from '../context.ts';
import type { Admin } from './auth.ts';

/** What every resolver gets: the app's services, and the caller as the actor of any change. */
export interface AdminContext {
  app: AppContext;
  admin: Admin;
  actor: Actor;
  requestId: string;
}

export function adminContext(app: AppContext, admin: Admin, req: Request): AdminContext {
  return {
    app,
    admin,
    actor: {
      userId: admin.userId,
      clientId: admin.clientId,
      via: 'graphql',
      ip: req.ip ?? null,
      requestId: req.id,
      sessionId: admin.sessionId,
    },
    requestId: req.id,
  };
}
