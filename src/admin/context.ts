import type { Request } from 'express';
import { auditLog, type AuditEvent } from '../audit/record.ts';
import { clientQueries } from '../clients/queries.ts';
import { clientService } from '../clients/service.ts';
import { localBackendId, type AppContext } from '../context.ts';
import type { Db } from '../db/connect.ts';
import { tokenQueries } from '../tokens/queries.ts';
import { tokenService } from '../tokens/service.ts';
import { userQueries } from '../users/queries.ts';
import { userService } from '../users/service.ts';
import type { Admin } from './auth.ts';

/** The services again, bound to one transaction: a mutation commits whole or not at all. */
function servicesOn(app: AppContext, db: Db) {
  const users = userQueries(db);
  return {
    db,
    clients: clientService(clientQueries(db)),
    users: userService(users, localBackendId(app.config)),
    userQueries: users,
    tokens: tokenService(tokenQueries(db), app.config, app.keys),
    audit: auditLog(db, app.logger),
  };
}

export type TxServices = ReturnType<typeof servicesOn>;

/** What every resolver gets: the app, the caller, and a way to run a mutation in one transaction. */
export interface AdminContext {
  app: AppContext;
  admin: Admin;
  requestId: string;
  ip: string | undefined;
  /** Runs `work` in a transaction and records the admin change in it. */
  change<T>(action: string, target: Pick<AuditEvent, 'userId' | 'clientId'>, work: (tx: TxServices) => Promise<T>): Promise<T>;
}

export function adminContext(app: AppContext, admin: Admin, req: Request): AdminContext {
  return {
    app,
    admin,
    requestId: req.id,
    ip: req.ip,
    change: (action, target, work) =>
      app.db.transaction(async (trx) => {
        const tx = servicesOn(app, trx);
        const result = await work(tx);
        await tx.audit.record({
          kind: 'admin.change',
          ...target,
          actorUserId: admin.userId,
          actorClientId: admin.clientId,
          ip: req.ip,
          requestId: req.id,
          details: { action },
        });
        return result;
      }),
  };
}
