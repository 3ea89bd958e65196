import type { AuditLog } from '../audit/record.ts';
import type { TokenIssueAudit } from '../audit/token-issues.ts';

/**
 * Where the token service writes its events (a replayed code, a reused refresh token, `token.issued`)
 * and the request they are about. Handed in per call because the summing of `token.issued` lives
 * for the whole process, outside the services a transaction rebuilds.
 */
export interface AuditTrail {
  audit: Pick<AuditLog, 'record'>;
  /**
   * `token.issued`: client_credentials summed per client and minute (docs/decisions.md "Audit volume");
   * every other issue's event is written in the tokens' own transaction.
   */
  issues: Pick<TokenIssueAudit, 'summed' | 'count'>;
  ip?: string;
  requestId?: string;
}
