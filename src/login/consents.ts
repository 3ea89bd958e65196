import type { Db } from '../db/connect.ts';
import { json } from '../db/rows.ts';

/** Scopes a user granted a client, remembered so a subset is never asked again. */
export const consentStore = (db: Db) => ({
  async granted(userId: string, clientId: string): Promise<Set<string>> {
    const row = await db('consents').where({ user_id: userId, client_id: clientId }).first('scopes');
    return new Set(json<string[]>(row?.scopes, []));
  },

  async grant(userId: string, clientId: string, scopes: string[]): Promise<void> {
    const all = [...new Set([...(await this.granted(userId, clientId)), ...scopes])];
    await db('consents')
      .insert({ user_id: userId, client_id: clientId, scopes: JSON.stringify(all), updated_at: Date.now() })
      .onConflict(['user_id', 'client_id'])
      .merge(['scopes', 'updated_at']);
  },
});

export type ConsentStore = ReturnType<typeof consentStore>;
