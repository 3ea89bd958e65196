import type { Database } from '../db/database.ts';
import { json } from '../db/rows.ts';

export const consentQueries = ({ knex: db }: Database) => ({
  async scopes(userId: string, clientId: string): Promise<string[]> {
    const row = await db('consents').where({ user_id: userId, client_id: clientId }).first('scopes');
    return json<string[]>(row?.scopes, []);
  },
  async save(userId: string, clientId: string, scopes: string[], now: number): Promise<void> {
    await db('consents')
      .insert({ user_id: userId, client_id: clientId, scopes: JSON.stringify(scopes), updated_at: now })
      .onConflict(['user_id', 'client_id'])
      .merge(['scopes', 'updated_at']);
  },
});

export type ConsentQueries = ReturnType<typeof consentQueries>;
