import type { Request } from 'express';
import type { Client } from '../../clients/model.ts';
import type { AppContext } from '../../context.ts';
import type { AuditTrail, TokenRequest } from '../../tokens/service.ts';
import type { Params } from '../../http/params.ts';

/**
 * What a grant decides: whom the tokens are for, their scopes, and what they are issued for (the
 * code or refresh token the token service found). The dispatcher hands it to the token service,
 * which issues, signs the id_token and audits for every grant alike.
 */
export type GrantResult = Omit<TokenRequest, 'client' | 'grantType'>;

export type Grant = (ctx: AppContext, req: Request, p: Params, client: Client) => Promise<GrantResult>;

/** Where the token service writes its events about this request. */
export const auditTrail = (ctx: AppContext, req: Request): AuditTrail => ({
  audit: ctx.audit,
  issues: ctx.tokenAudit,
  ip: req.ip,
  requestId: req.id,
});
