import type { Database } from '../db/database.ts';

/** A live (unused, unexpired) reset link: whose it is. */
export interface ResetLink {
  userId: string;
  expiresAt: number;
}

/**
 * The reset links (docs/password-reset-by-mail.md), by the hash of their token, and the lookup of who a typed name or email
 * means. A link is spent by one atomic update, so two submissions of one link cannot both set a password.
 */
export const resetQueries = ({ knex: db }: Database) => ({
  /** Users whose name (any backend, compared as the users table keys it) or email is `typed`; at most `limit`. */
  async candidates(typed: string, limit: number): Promise<Array<{ id: string; backend: string }>> {
    const key = typed.toLowerCase();
    return db('users')
      .select('id', 'backend')
      .where('username_key', key)
      .orWhereRaw('lower(email) = ?', [key])
      .orderBy('created_at')
      .limit(limit);
  },

  async insert(tokenHash: string, userId: string, now: number, expiresAt: number): Promise<void> {
    await db('password_reset_tokens').insert({
      token_hash: tokenHash,
      user_id: userId,
      expires_at: expiresAt,
      used_at: null,
      created_at: now,
    });
  },

  async findLive(tokenHash: string, now: number): Promise<ResetLink | undefined> {
    const row = await db('password_reset_tokens')
      .where({ token_hash: tokenHash })
      .whereNull('used_at')
      .andWhere('expires_at', '>', now)
      .first('user_id', 'expires_at');
    return row ? { userId: String(row.user_id), expiresAt: Number(row.expires_at) } : undefined;
  },

  /** Spends a live link; false when it is used, expired or unknown (another submission won). */
  async claim(tokenHash: string, now: number): Promise<boolean> {
    const n = await db('password_reset_tokens')
      .where({ token_hash: tokenHash })
      .whereNull('used_at')
      .andWhere('expires_at', '>', now)
      .update({ used_at: now });
    return n > 0;
  },

  /** Gives a claimed link back: the write it was spent on did not happen (a refusal, an outage). */
  async unclaim(tokenHash: string): Promise<void> {
    await db('password_reset_tokens').where({ token_hash: tokenHash }).update({ used_at: null });
  },

  /**
   * Ends every link of the user, used or not (docs/decisions.md, "Reset links and the admin's remedies"): a
   * password set, an email changed, a user disabled, MFA reset. Deleted rather than marked used, so a
   * link claimed at that moment by a reset whose write then fails is not given back (`unclaim`).
   * Called inside the remedy's own transaction.
   */
  async discardAllOf(userId: string): Promise<void> {
    await db('password_reset_tokens').where({ user_id: userId }).delete();
  },
});

export type ResetQueries = ReturnType<typeof resetQueries>;
