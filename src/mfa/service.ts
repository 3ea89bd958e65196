import type { Actor, AuditLog } from '../audit/record.ts';
import type { Origin } from '../audit/model.ts';
import type { SessionStore } from '../login/sessions.ts';
import type { Transaction } from '../db/transaction.ts';
import { clock } from '../clock.ts';
import { decrypt, encrypt } from '../crypto/secrets.ts';
import type { User } from '../users/model.ts';
import type { MfaQueries } from './mfa-queries.ts';
import type { ResetQueries } from '../password-reset/reset-queries.ts';
import { newRecoveryCode, RECOVERY_CODE_COUNT, recoveryCodeHash } from './recovery-codes.ts';
import { passkeyService, type PasskeyRegistration } from './passkeys.ts';
import { matchingStep, newTotpSecret, totpUri } from './totp.ts';
import type { Amr } from '../login/model.ts';

export interface MfaStatus {
  totp: boolean;
  passkeys: number;
  recoveryCodesLeft: number;
}

/** Where a user's own change comes from; `keep`: the session making it, which stays (docs/decisions.md). */
export interface ChangeOrigin extends Origin {
  keep?: string;
}

/** What `reset` needs of a transaction. */
interface MfaTransaction {
  queries: { mfa: Pick<MfaQueries, 'removeTotp' | 'removePasskeys' | 'removeRecoveryCodes'>; resets: Pick<ResetQueries, 'discardAllOf'> };
  sessions: Pick<SessionStore, 'endAllOf'>;
  audit: Pick<AuditLog, 'change'>;
}

/** Which factor a code was: a TOTP code or one of the recovery codes. */
export type CodeKind = 'totp' | 'recovery';

/** The methods of a sign-in, `mfa` added when two kinds of factor were used (RFC 8176). */
export const withMfa = (methods: Amr[]): Amr[] => {
  const set = new Set(methods.filter((m) => m !== 'mfa'));
  return set.size >= 2 ? [...set, 'mfa'] : [...set];
};

/**
 * The second factors of a user (docs/multi-factor-sign-in.md): TOTP and recovery codes. Secrets are encrypted at rest and
 * recovery codes kept as keyed hashes; each TOTP code and each recovery code is taken once, by an
 * atomic update, whatever number of requests carry it at the same moment.
 */
export function mfaService(
  queries: MfaQueries,
  deps: {
    secretKey: Buffer;
    codeKey: Buffer;
    sealKey: Buffer;
    audit: AuditLog;
    issuer: string;
    publicUrl: string;
    sessions: Pick<SessionStore, 'endAllOf'>;
    /** For the admin's reset: its deletes and its audit event commit together. */
    transaction: Transaction<MfaTransaction>;
  },
) {
  const issueCodes = async (userId: string, now: number): Promise<string[]> => {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await queries.replaceRecoveryCodes(
      userId,
      codes.map((c) => recoveryCodeHash(deps.codeKey, c)),
      now,
    );
    return codes;
  };
  const totpOn = async (userId: string) => (await queries.totp(userId))?.confirmedAt != null;
  const factorCount = queries.factorCount;
  /** A factor added or removed: the user's other sessions, codes and tokens end with the old set (docs/decisions.md). */
  const factorsChanged = (userId: string, c: ChangeOrigin) =>
    deps.sessions.endAllOf(userId, { except: c.keep, actor: { userId, clientId: null, via: 'account', ip: c.ip, requestId: c.requestId } });

  return {
    passkeys: passkeyService(queries, { publicUrl: deps.publicUrl, sealKey: deps.sealKey, audit: deps.audit }),

    async status(userId: string): Promise<MfaStatus> {
      return {
        totp: await totpOn(userId),
        passkeys: await queries.passkeyCount(userId),
        recoveryCodesLeft: await queries.recoveryCodesLeft(userId),
      };
    },

    /** Whether the user has a second factor to be asked for: TOTP or a passkey. */
    async hasFactor(userId: string): Promise<boolean> {
      return (await factorCount(userId)) > 0;
    },

    /** Whether the second step may offer a passkey (passkeys on, and the user has one). */
    async offersPasskey(userId: string): Promise<boolean> {
      return this.passkeys.enabled && (await queries.passkeyCount(userId)) > 0;
    },

    /**
     * The recovery codes that go with a user's first factor (docs/multi-factor-sign-in.md): made now if the user has none,
     * else undefined (the user has them from an earlier factor).
     */
    async codesForFirstFactor(userId: string): Promise<string[] | undefined> {
      if ((await queries.recoveryCodesLeft(userId)) > 0 || (await factorCount(userId)) > 1) return undefined;
      return issueCodes(userId, clock.now());
    },

    /**
     * A new secret to enrol (a pending one is replaced); undefined when TOTP is already on. The secret
     * is shown to the user once, here, and stored encrypted.
     */
    async startTotp(user: User): Promise<{ secret: string; uri: string } | undefined> {
      const secret = newTotpSecret();
      if (!(await queries.startTotp(user.id, encrypt(deps.secretKey, secret), clock.now()))) return undefined;
      return { secret, uri: totpUri(secret, deps.issuer, user.username) };
    },

    /** The pending secret again (the enrolment page reloaded), undefined when none is pending. */
    async pendingTotp(user: User): Promise<{ secret: string; uri: string } | undefined> {
      const row = await queries.totp(user.id);
      if (!row || row.confirmedAt !== null) return undefined;
      const secret = decrypt(deps.secretKey, row.secretEnc);
      return { secret, uri: totpUri(secret, deps.issuer, user.username) };
    },

    /**
     * Confirms a pending enrolment with its first code: the recovery codes when TOTP is the user's
     * first factor (else an empty list), undefined for a wrong code.
     */
    async confirmTotp(user: User, code: string, origin: ChangeOrigin = {}): Promise<string[] | undefined> {
      const row = await queries.totp(user.id);
      if (!row || row.confirmedAt !== null) return undefined;
      const now = clock.now();
      const step = matchingStep(decrypt(deps.secretKey, row.secretEnc), code.trim(), now);
      if (step === undefined || !(await queries.takeStep(user.id, step, now, true))) return undefined;
      await factorsChanged(user.id, origin);
      await deps.audit.record({ kind: 'mfa.totp_enrolled', userId: user.id, ip: origin.ip, requestId: origin.requestId });
      return (await this.codesForFirstFactor(user.id)) ?? [];
    },

    /** Checks a second-factor code: a TOTP code (six digits) or a recovery code, each taken once. */
    async verify(
      userId: string,
      typed: string,
      origin: { ip?: string; requestId?: string; clientId?: string } = {},
    ): Promise<CodeKind | undefined> {
      const code = typed.trim();
      const now = clock.now();
      if (/^\d{6}$/.test(code)) {
        const row = await queries.totp(userId);
        if (!row || row.confirmedAt === null) return undefined;
        const step = matchingStep(decrypt(deps.secretKey, row.secretEnc), code, now);
        return step !== undefined && (await queries.takeStep(userId, step, now, false)) ? 'totp' : undefined;
      }
      if (code.length < 10 || code.length > 64) return undefined;
      if (!(await queries.useRecoveryCode(userId, recoveryCodeHash(deps.codeKey, code), now))) return undefined;
      await deps.audit.record({
        kind: 'mfa.recovery_code_used',
        userId,
        clientId: origin.clientId,
        ip: origin.ip,
        requestId: origin.requestId,
        details: { left: await queries.recoveryCodesLeft(userId) },
      });
      return 'recovery';
    },

    /** A fresh set of ten recovery codes; every earlier one stops working. */
    async newRecoveryCodes(userId: string, origin: { ip?: string; requestId?: string } = {}): Promise<string[]> {
      const codes = await issueCodes(userId, clock.now());
      await deps.audit.record({ kind: 'mfa.recovery_codes_renewed', userId, ip: origin.ip, requestId: origin.requestId });
      return codes;
    },

    /** The user turns TOTP off; with no factor left, the recovery codes go too. */
    async removeTotp(userId: string, origin: ChangeOrigin = {}): Promise<void> {
      if ((await queries.removeTotp(userId)) === 0) return;
      if ((await factorCount(userId)) === 0) await queries.removeRecoveryCodes(userId);
      await factorsChanged(userId, origin);
      await deps.audit.record({ kind: 'mfa.totp_removed', userId, ip: origin.ip, requestId: origin.requestId });
    },

    /** The user removes a passkey; with no factor left, the recovery codes go too. */
    async removePasskey(userId: string, credentialId: string, origin: ChangeOrigin = {}): Promise<boolean> {
      if (!(await this.passkeys.remove(userId, credentialId, { ip: origin.ip, requestId: origin.requestId }))) return false;
      if ((await factorCount(userId)) === 0) await queries.removeRecoveryCodes(userId);
      await factorsChanged(userId, origin);
      return true;
    },

    /**
     * A new passkey of the user's (the ceremony checked by passkeys.register): undefined when added,
     * else why not, for the account page.
     */
    async addPasskey(user: User, registration: PasskeyRegistration, origin: ChangeOrigin = {}): Promise<string | undefined> {
      const refused = await this.passkeys.register(user, registration, { ip: origin.ip, requestId: origin.requestId });
      if (!refused) await factorsChanged(user.id, origin);
      return refused;
    },

    /**
     * An administrator removes every factor of a user (a lost phone); every session of theirs ends,
     * and every reset link: one mailed before would now set a password with no second factor asked.
     */
    async reset(userId: string, actor: Actor): Promise<void> {
      await deps.transaction(async (tx) => {
        await tx.queries.mfa.removeTotp(userId);
        await tx.queries.mfa.removePasskeys(userId);
        await tx.queries.mfa.removeRecoveryCodes(userId);
        await tx.sessions.endAllOf(userId, { actor });
        await tx.queries.resets.discardAllOf(userId);
        await tx.audit.change('user.reset_mfa', actor, { userId });
      });
    },
  };
}

export type MfaService = ReturnType<typeof mfaService>;
