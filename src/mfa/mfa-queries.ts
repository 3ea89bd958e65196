import type { Database } from '../db/database.ts';
import { statement } from '../db/statements.ts';
import { json, num } from '../db/rows.ts';
import type { StoredChallenge, StoredPasskey } from './model.ts';

/**
 * The counts, prepared once (the factor count is asked at every password sign-in); passkeys are
 * counted by the same subquery in both.
 */
const passkeysOf = 'select count(*) from passkeys where user_id = ?';
const factorCountSql = statement(
  `select (select count(*) from user_totp where user_id = ? and confirmed_at is not null) + (${passkeysOf}) as n`,
);
const passkeyCountSql = statement(`select (${passkeysOf}) as n`);

export interface StoredTotp {
  userId: string;
  secretEnc: string;
  confirmedAt: number | null;
  lastStep: number;
}

const toPasskey = (r: Record<string, unknown>): StoredPasskey => ({
  credentialId: String(r.credential_id),
  userId: String(r.user_id),
  publicKey: String(r.public_key),
  counter: num(r.counter),
  transports: json<string[]>(r.transports, []),
  name: String(r.name),
  createdAt: num(r.created_at),
  lastUsedAt: r.last_used_at == null ? null : num(r.last_used_at),
});

export const mfaQueries = ({ knex: db, fast }: Database) => ({
  async passkeys(userId: string): Promise<StoredPasskey[]> {
    return (await db('passkeys').where({ user_id: userId }).orderBy('created_at')).map(toPasskey);
  },
  async passkey(credentialId: string): Promise<StoredPasskey | undefined> {
    const r = await db('passkeys').where({ credential_id: credentialId }).first();
    return r ? toPasskey(r) : undefined;
  },
  /** Confirmed TOTP plus passkeys, in one round trip: asked at every password sign-in. */
  async factorCount(userId: string): Promise<number> {
    const row = await fast.get<{ n: number | string }>(factorCountSql, [userId, userId]);
    return Number(row?.n ?? 0);
  },
  async passkeyCount(userId: string): Promise<number> {
    const row = await fast.get<{ n: number | string }>(passkeyCountSql, [userId]);
    return Number(row?.n ?? 0);
  },
  /** Adds a credential; false when its id is registered already (to this user or another). */
  async insertPasskey(p: StoredPasskey): Promise<boolean> {
    const rows = (await db('passkeys')
      .insert({
        credential_id: p.credentialId,
        user_id: p.userId,
        public_key: p.publicKey,
        counter: p.counter,
        transports: JSON.stringify(p.transports),
        name: p.name,
        created_at: p.createdAt,
        last_used_at: p.lastUsedAt,
      })
      .onConflict('credential_id')
      .ignore()
      .returning('credential_id')) as unknown[];
    return rows.length > 0;
  },
  /** Records a use: the authenticator's new signature counter (a clone would send an old one). */
  async usePasskey(credentialId: string, counter: number, now: number): Promise<void> {
    await db('passkeys').where({ credential_id: credentialId }).update({ counter, last_used_at: now });
  },

  async addChallenge(c: StoredChallenge): Promise<void> {
    await db('webauthn_challenges').insert({
      challenge: c.challenge,
      purpose: c.purpose,
      user_id: c.userId,
      used_at: null,
      expires_at: c.expiresAt,
    });
  },
  /**
   * Takes a challenge for `purpose`, once, in one statement: of two requests carrying it at the same
   * moment (in one process or two) exactly one gets the row; a used or expired one gives nothing.
   */
  async takeChallenge(challenge: string, purpose: StoredChallenge['purpose'], now: number): Promise<{ userId: string | null } | undefined> {
    const rows = (await db('webauthn_challenges')
      .where({ challenge, purpose })
      .whereNull('used_at')
      .andWhere('expires_at', '>', now)
      .update({ used_at: now })
      .returning('user_id')) as Array<{ user_id: string | null }>;
    return rows[0] ? { userId: rows[0].user_id == null ? null : String(rows[0].user_id) } : undefined;
  },
  async removePasskey(userId: string, credentialId: string): Promise<number> {
    return db('passkeys').where({ user_id: userId, credential_id: credentialId }).delete();
  },
  async removePasskeys(userId: string): Promise<number> {
    return db('passkeys').where({ user_id: userId }).delete();
  },

  async totp(userId: string): Promise<StoredTotp | undefined> {
    const r = await db('user_totp').where({ user_id: userId }).first();
    return r
      ? {
          userId,
          secretEnc: String(r.secret_enc),
          confirmedAt: r.confirmed_at == null ? null : num(r.confirmed_at),
          lastStep: num(r.last_step),
        }
      : undefined;
  },

  /** A new, unconfirmed secret: replaces an earlier unconfirmed one, never a confirmed one. */
  async startTotp(userId: string, secretEnc: string, now: number): Promise<boolean> {
    const rows = (await db('user_totp')
      .insert({ user_id: userId, secret_enc: secretEnc, confirmed_at: null, last_step: 0, created_at: now })
      .onConflict('user_id')
      .merge(['secret_enc', 'created_at', 'last_step'])
      .whereNull('user_totp.confirmed_at')
      .returning('user_id')) as unknown[];
    return rows.length > 0;
  },

  /**
   * Takes time step `step` for the user's secret: only if it is newer than every step taken before,
   * in one statement, so a code is accepted once even when sent twice at the same moment. With
   * `confirm`, also confirms a pending enrolment.
   */
  async takeStep(userId: string, step: number, now: number, confirm: boolean): Promise<boolean> {
    const q = db('user_totp').where({ user_id: userId }).andWhere('last_step', '<', step);
    const changed = await (confirm
      ? q.whereNull('confirmed_at').update({ last_step: step, confirmed_at: now })
      : q.whereNotNull('confirmed_at').update({ last_step: step }));
    return changed > 0;
  },

  async removeTotp(userId: string): Promise<number> {
    return db('user_totp').where({ user_id: userId }).delete();
  },

  async replaceRecoveryCodes(userId: string, hashes: string[], now: number): Promise<void> {
    await db('recovery_codes').where({ user_id: userId }).delete();
    await db('recovery_codes').insert(hashes.map((h) => ({ code_hash: h, user_id: userId, used_at: null, created_at: now })));
  },

  /** Spends one recovery code, atomically: false when it is not this user's or was used. */
  async useRecoveryCode(userId: string, hash: string, now: number): Promise<boolean> {
    return (await db('recovery_codes').where({ code_hash: hash, user_id: userId }).whereNull('used_at').update({ used_at: now })) > 0;
  },

  async recoveryCodesLeft(userId: string): Promise<number> {
    const [r] = await db('recovery_codes').where({ user_id: userId }).whereNull('used_at').count({ n: '*' });
    return Number(r?.n ?? 0);
  },

  async removeRecoveryCodes(userId: string): Promise<number> {
    return db('recovery_codes').where({ user_id: userId }).delete();
  },
});

export type MfaQueries = ReturnType<typeof mfaQueries>;
