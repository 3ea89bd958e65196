import type { Database } from '../db/database.ts';
import { num } from '../db/rows.ts';
import { statement } from '../db/statements.ts';
import type { ScimToken } from './model.ts';

function toToken(r: Record<string, unknown>): ScimToken {
  return {
    id: String(r.id),
    backend: String(r.backend),
    description: String(r.description ?? ''),
    createdBy: (r.created_by as string | null) ?? null,
    createdAt: num(r.created_at),
    lastUsedAt: r.last_used_at == null ? null : num(r.last_used_at),
  };
}

// Every SCIM request reads one (docs/scim-provisioning.md "Tokens"): prepared, by the unique hash.
const sql = {
  byHash: statement('select id, backend, last_used_at from scim_tokens where token_hash = ?'),
  touch: statement('update scim_tokens set last_used_at = ? where id = ? and (last_used_at is null or last_used_at <= ?)'),
};

/** The SCIM clients' secret tokens, by the hash of the secret (only the hash is stored). */
export const scimTokenQueries = ({ knex: db, fast }: Database) => ({
  async insert(token: ScimToken, tokenHash: string): Promise<void> {
    await db('scim_tokens').insert({
      id: token.id,
      backend: token.backend,
      description: token.description,
      token_hash: tokenHash,
      created_by: token.createdBy,
      created_at: token.createdAt,
      last_used_at: token.lastUsedAt,
    });
  },

  /** Every token, newest first (a handful per backend: no paging). */
  async list(): Promise<ScimToken[]> {
    return (await db('scim_tokens').select('*').orderBy('created_at', 'desc').orderBy('id')).map(toToken);
  },

  async find(id: string): Promise<ScimToken | undefined> {
    const row = await db('scim_tokens').where({ id }).first();
    return row ? toToken(row) : undefined;
  },

  /** The token whose secret hashes to `tokenHash`: its id, backend and last use. */
  async findByHash(tokenHash: string): Promise<{ id: string; backend: string; lastUsedAt: number | null } | undefined> {
    const row = await fast.get(sql.byHash, [tokenHash]);
    if (!row) return undefined;
    return { id: String(row.id), backend: String(row.backend), lastUsedAt: row.last_used_at == null ? null : num(row.last_used_at) };
  },

  /** Records a use at `now` unless one was recorded after `since`: another process may have just done it. */
  touch: (id: string, now: number, since: number): Promise<number> => fast.run(sql.touch, [now, id, since]),

  async remove(id: string): Promise<boolean> {
    return (await db('scim_tokens').where({ id }).delete()) > 0;
  },
});

export type ScimTokenQueries = ReturnType<typeof scimTokenQueries>;
