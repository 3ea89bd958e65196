import type { ConsentQueries } from './consent-queries.ts';
import type { AuditLog } from '../audit/record.ts';
import type { Origin } from '../audit/model.ts';
import type { Transaction } from '../db/transaction.ts';
import { clock } from '../clock.ts';

/** Scopes a user granted a client, remembered so a subset is never asked again. */
export interface ConsentStore {
  granted(userId: string, clientId: string): Promise<Set<string>>;
  /** The user allowed `scopes` to the client: remembered (added to what they granted before) and audited (`consent.granted`), in one transaction. */
  grant(userId: string, clientId: string, scopes: string[], origin: Origin): Promise<void>;
}

/**
 * Outside a transaction, a grant runs in one of its own (`own`), so the consent and its audit event
 * commit together; inside one, it joins that.
 */
export const consentStore = (
  queries: ConsentQueries,
  audit: Pick<AuditLog, 'record'>,
  own?: Transaction<{ consents: ConsentStore }>,
): ConsentStore => ({
  async granted(userId: string, clientId: string): Promise<Set<string>> {
    return new Set(await queries.scopes(userId, clientId));
  },

  async grant(userId: string, clientId: string, scopes: string[], origin: Origin): Promise<void> {
    if (own) return own((tx) => tx.consents.grant(userId, clientId, scopes, origin));
    const all = [...new Set([...(await queries.scopes(userId, clientId)), ...scopes])];
    await queries.save(userId, clientId, all, clock.now());
    await audit.record({ kind: 'consent.granted', userId, clientId, ip: origin.ip, requestId: origin.requestId, details: { scopes } });
  },
});
