import { clock } from '../clock.ts';
import type { TokenQueries } from './queries.ts';
import type { AuditTrail } from './trail.ts';

/**
 * What a replay sets off, written once for both moments it is seen: a code or refresh token spent
 * before it was looked up, or spent by a concurrent request between the look-up and the issue. What it
 * issued is revoked (RFC 6749 §4.1.2; a refresh token takes its whole family), and the replay audited
 * naming the client that presented it.
 */
export const replays = (queries: TokenQueries) => ({
  async codeReplayed(codeHash: string, clientId: string, trail: AuditTrail): Promise<void> {
    // What the code issued is its family (migrations/20261209000000_code_family.ts); tokens issued
    // before codes named their family carry the code's hash instead.
    const family = await queries.codeFamily(codeHash);
    if (family) await queries.revokeWhere({ family_id: family }, clock.now());
    await queries.revokeWhere({ code_hash: codeHash }, clock.now());
    await trail.audit.record({ kind: 'code.replayed', clientId, ip: trail.ip, requestId: trail.requestId });
  },

  async refreshReused(familyId: string, clientId: string, trail: AuditTrail): Promise<void> {
    await queries.revokeWhere({ family_id: familyId }, clock.now());
    await trail.audit.record({ kind: 'token.reuse_detected', clientId, ip: trail.ip, requestId: trail.requestId });
  },
});
