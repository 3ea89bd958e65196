import type { Database } from '../db/database.ts';
import { num, numOrNull } from '../db/rows.ts';
import type { StoredKey } from './model.ts';

export const keyQueries = ({ knex: db }: Database) => ({
  /** Keys still published: not retired, or retired after `retiredAfter`; in the order they sign. */
  async published(retiredAfter: number): Promise<StoredKey[]> {
    const rows = await db('signing_keys')
      .where((q) => q.whereNull('retired_at').orWhere('retired_at', '>', retiredAfter))
      .orderBy([{ column: 'activates_at' }, { column: 'kid' }]);
    return rows.map((r) => ({
      kid: String(r.kid),
      alg: String(r.alg),
      publicJwk: String(r.public_jwk),
      privateJwkEnc: String(r.private_jwk_enc),
      createdAt: num(r.created_at),
      activatesAt: num(r.activates_at ?? r.created_at),
      retiredAt: numOrNull(r.retired_at),
    }));
  },

  async insert(k: Omit<StoredKey, 'retiredAt'>): Promise<void> {
    await db('signing_keys').insert({
      kid: k.kid,
      alg: k.alg,
      public_jwk: k.publicJwk,
      private_jwk_enc: k.privateJwkEnc,
      created_at: k.createdAt,
      activates_at: k.activatesAt,
    });
  },

  /** Retires, at `at`, every current key of `alg` but `kid`. */
  async retireOthers(alg: string, kid: string, at: number): Promise<void> {
    await db('signing_keys').where({ alg }).whereNot({ kid }).whereNull('retired_at').update({ retired_at: at });
  },

  async deleteRetiredBefore(at: number): Promise<void> {
    await db('signing_keys').where('retired_at', '<', at).delete();
  },
});

export type KeyQueries = ReturnType<typeof keyQueries>;
