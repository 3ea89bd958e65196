import type { ConsentQueries } from './consent-queries.ts';
import { clock } from '../clock.ts';

/** Scopes a user granted a client, remembered so a subset is never asked again. */
export const consentStore = (queries: ConsentQueries) => ({
  async granted(userId: string, clientId: string): Promise<Set<string>> {
    return new Set(await queries.scopes(userId, clientId));
  },

  async grant(userId: string, clientId: string, scopes: string[]): Promise<void> {
    const all = [...new Set([...(await queries.scopes(userId, clientId)), ...scopes])];
    await queries.save(userId, clientId, all, clock.now());
  },
});

export type ConsentStore = ReturnType<typeof consentStore>;
