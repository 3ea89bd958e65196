import type { Logger } from 'pino';
import type { Actor, AuditLog } from '../audit/record.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { seal, unseal } from '../crypto/sealed.ts';
import { hashToken, randomToken } from '../crypto/tokens.ts';
import type { IdentityChain } from '../identity/chain.ts';
import { BackendUnavailableError } from '../identity/contract.ts';
import type { SignInService } from '../login/sign-in.ts';
import type { MfaService } from '../mfa/service.ts';
import type { ThrottleQueries } from '../throttle/throttle-queries.ts';
import type { User } from '../users/model.ts';
import { PasswordRefused } from '../users/password-refusals.ts';
import { checkPassword, type UserService } from '../users/service.ts';
import type { Mail, Mailer } from './mailer.ts';
import { requestLimits } from './request-limits.ts';
import type { ResetQueries } from './reset-queries.ts';
import { INVITATION_TTL_MS, invitationMail, toInvite } from './invitation.ts';
import type { Origin } from '../audit/model.ts';

/** docs/password-reset-by-mail.md: a reset link is good for 15 minutes. Fixed, not a setting. */
export const RESET_TTL_MS = 15 * 60_000;
/** Accounts one typed email may reach (an address shared by a few accounts gets a link for each). */
const MAX_ACCOUNTS = 3;
/** Requests whose work (lookup, mail) is still running, past which new ones are dropped (logged). */
const MAX_PENDING = 100;
/** A link's token: 256 bits, base64url. Anything else is not looked up. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;
/** The purpose the passkey proof is sealed for. */
const PASSKEY_PROOF = 'password-reset-passkey';
/** No throttle slot came free in time (docs/security.md): the load, not the answer. */
const BUSY_WORDS = 'Too many sign-ins are in progress. Try again in a moment.';

/** Where a request comes from, as its audit events record it. */
export interface ResetOrigin {
  ip: string;
  requestId: string;
  /** The browser's brute-force device cookie, for the second factor's count. */
  deviceCookie?: string;
}

export type ResetOutcome =
  | { ok: true; user: User }
  /** The link is unknown, used, expired or its user gone: a 400 page. */
  | { ok: false; reason: 'invalid_link' }
  /** The form again, with these words: passwords differ, too short, the directory's policy, a wrong code. */
  | { ok: false; reason: 'retry'; status: number; message: string; retryAfter?: number }
  /** The user's directory cannot be reached: a 503 page, and the link stays good. */
  | { ok: false; reason: 'unavailable' };

/** A passkey at the reset's second step: the proof the reset form carries on, or why not. */
export type ResetPasskeyOutcome = { ok: true; user: User; proof: string } | Exclude<ResetOutcome, { ok: true }>;

/** What the reset page shows for a live link. */
export interface OpenLink {
  user: User;
  /** A second factor must be passed (a code, or a passkey) before the new password is set. */
  needsCode: boolean;
  /** The second step may take a passkey (passkeys on, and the user has one). */
  passkey: boolean;
  /** The proof given to `open` is a passkey passed for this link. */
  proved: boolean;
}

export interface PasswordResetDeps {
  queries: ResetQueries;
  throttle: ThrottleQueries;
  users: Pick<UserService, 'find' | 'setPassword' | 'keepsPassword'>;
  identity: Pick<IdentityChain, 'members' | 'canWritePassword' | 'lookup'>;
  mfa: Pick<MfaService, 'hasFactor' | 'offersPasskey' | 'passkeys'>;
  signIn: Pick<SignInService, 'secondStep' | 'passkeyStep'>;
  /** Signs the proof that a link's user passed their passkey, which the reset form carries on. */
  factorKey: Buffer;
  audit: AuditLog;
  mailer?: Mailer;
  /**
   * Whether a backend invites its new users by mail (a `scim` backend with `invite: true`,
   * docs/scim-provisioning.md "How SCIM users sign in"). @default none does
   */
  invites?: (backend: string) => boolean;
  config: Config;
  logger: Logger;
}

/**
 * "Forgot your password?" (docs/password-reset-by-mail.md). A request is answered before anything about the account is
 * looked at: the lookup, the throttle, the link and the mail run after the answer, off the request's
 * path, so a known and an unknown account get the same answer in the same time, and a mail server
 * that is down changes nothing the requester sees. Only the token's hash is stored; a link is spent
 * by one atomic claim, given back when the write it was claimed for did not happen.
 */
export function passwordResetService(deps: PasswordResetDeps) {
  const { queries, config, logger, audit } = deps;
  const limits = requestLimits(deps.throttle, config.passwordReset);
  const pending = new Set<Promise<void>>();
  const chainOrder = (backend: string) => {
    const i = deps.identity.members.findIndex((m) => m.id === backend);
    return i < 0 ? Number.MAX_SAFE_INTEGER : i;
  };

  const invites = deps.invites ?? (() => false);
  /**
   * Who may get a link: an enabled account with an email whose password Latchkey can set: a hash kept
   * here (an invited user without one yet too: their invitation may have run out), or a directory's.
   */
  const resettable = (u: User | undefined): u is User =>
    !!u &&
    !u.disabled &&
    !!u.email &&
    (deps.users.keepsPassword(u) ? !!u.passwordHash || invites(u.backend) : deps.identity.canWritePassword(u, 'reset'));

  const linkOfToken = (token: string) => `${config.publicUrl}/password/reset?token=${token}`;

  /** Sends a link's mail; a mail server's refusal is one log line and an audit event, never thrown: false then. */
  async function send(user: User, message: Mail, origin: Origin, details?: Record<string, unknown>): Promise<boolean> {
    try {
      await deps.mailer!.send(message);
      return true;
    } catch (err) {
      // One line, without the link or the mail server's credentials.
      logger.error(
        { requestId: origin.requestId, err: (err as Error).message },
        `${details?.invitation ? 'invitation' : 'password reset'} mail not sent: the mail server did not take it`,
      );
      await audit.record({
        kind: 'password_reset.mail_failed',
        userId: user.id,
        ip: origin.ip,
        requestId: origin.requestId,
        ...(details ? { details } : {}),
      });
      return false;
    }
  }

  /** The reset mail: asked for by someone at the login page, or sent by an administrator (`byAdmin`). */
  const mail = (user: User, token: string, origin: Origin, byAdmin = false) =>
    send(
      user,
      {
        to: user.email!,
        subject: 'Reset your password',
        text: `${byAdmin ? 'An administrator sent you this link to reset' : 'Someone, hopefully you, asked to reset'} the password of the account "${user.username}" at ${new URL(config.publicUrl).host}.

To choose a new password, open this link within 15 minutes. It works once:
${linkOfToken(token)}

If you did not ask for this, ignore this mail: your password stays as it is.
`,
      },
      origin,
      byAdmin ? { byAdmin: true } : undefined,
    );

  /** An invitation's link and mail (the SCIM invitation queue, src/scim/invitations.ts, calls it one at a time, in order). */
  async function sendInvitation(userId: string, origin: Origin): Promise<void> {
    // Read again when its turn comes: given a password or deprovisioned meanwhile, nobody is invited.
    const user = await deps.users.find(userId);
    if (!user || !toInvite(user, invites)) return;
    const token = randomToken(32);
    const now = clock.now();
    await queries.insert(hashToken(token), user.id, now, now + INVITATION_TTL_MS);
    const details = { invitation: true, backend: user.backend };
    await audit.record({
      kind: 'password_reset.requested',
      userId: user.id,
      ip: origin.ip,
      requestId: origin.requestId,
      details: { outcome: 'sent', ...details },
    });
    await send(user, invitationMail(user, linkOfToken(token), config.publicUrl), origin, details);
  }

  async function work(typed: string, origin: ResetOrigin): Promise<void> {
    const event = { ip: origin.ip, requestId: origin.requestId };
    const name = typed.trim();
    const addressOk = await limits.address(origin.ip);
    const found = name && name.length <= 320 ? await queries.candidates(name, MAX_ACCOUNTS * 2) : [];
    const users = (await Promise.all(found.map((c) => deps.users.find(c.id)))).filter(resettable);
    // A directory user who has never signed in here has no local record yet: when no backend of the
    // chain holds a record of the name (an upstream's user does not count: sign-ins never reach it by
    // name), the directories are asked for it; not while the address is over its limit (each asking is
    // a search). A chain backend's record, resettable or not, owns the name, as at sign-in.
    const chainHolds = found.some((c) => chainOrder(c.backend) !== Number.MAX_SAFE_INTEGER);
    if (!chainHolds && users.length === 0 && name && name.length <= 320 && addressOk) {
      const known = await deps.identity.lookup(name).catch((err: unknown) => {
        logger.error({ requestId: origin.requestId, err: (err as Error).message }, 'password reset: the directory lookup failed');
        return undefined;
      });
      if (resettable(known)) users.push(known);
    }
    // A name held in several backends belongs to the first of the chain that holds it, as at sign-in.
    users.sort((a, b) => chainOrder(a.backend) - chainOrder(b.backend));
    const byName = users.find((u) => u.username.toLowerCase() === name.toLowerCase());
    const targets = byName ? [byName] : users.slice(0, MAX_ACCOUNTS);
    if (targets.length === 0) {
      // The typed text is never recorded: it may be a password typed into the wrong field.
      await audit.record({
        kind: 'password_reset.requested',
        ...event,
        details: { outcome: found.length > 0 ? 'not_resettable' : 'unknown' },
      });
      return;
    }
    for (const user of targets) {
      if (!addressOk || !(await limits.account(user.id))) {
        await audit.record({ kind: 'password_reset.requested', userId: user.id, ...event, details: { outcome: 'throttled' } });
        continue;
      }
      const token = randomToken(32);
      const now = clock.now();
      await queries.insert(hashToken(token), user.id, now, now + RESET_TTL_MS);
      await audit.record({ kind: 'password_reset.requested', userId: user.id, ...event, details: { outcome: 'sent' } });
      await mail(user, token, origin);
    }
  }

  /** The live link of `token` and its user, or undefined. */
  async function linkOf(token: string | undefined): Promise<{ hash: string; user: User; expiresAt: number } | undefined> {
    if (!token || !TOKEN_SHAPE.test(token)) return undefined;
    const hash = hashToken(token);
    const link = await queries.findLive(hash, clock.now());
    const user = link && (await deps.users.find(link.userId));
    return user && !user.disabled ? { hash, user, expiresAt: link.expiresAt } : undefined;
  }

  /**
   * A passkey passed for this link: sealed to the link (its token's hash) until the link expires.
   * It is worth nothing without the link, which is used once and dies with the admin's remedies.
   */
  const passkeyProof = (link: { hash: string; expiresAt: number }) =>
    seal(deps.factorKey, PASSKEY_PROOF, { link: link.hash }, link.expiresAt - clock.now());
  const provedByPasskey = (link: { hash: string }, proof: string | undefined) =>
    !!proof && unseal<{ link: string }>(deps.factorKey, PASSKEY_PROOF, proof)?.link === link.hash;

  const failed = (reason: string, origin: ResetOrigin, userId?: string) =>
    audit.record({
      kind: 'password_reset.failed',
      ...(userId ? { userId } : {}),
      ip: origin.ip,
      requestId: origin.requestId,
      details: { reason },
    });

  return {
    enabled: config.passwordReset.enabled,

    /**
     * A request for a link for `typed` (a username or an email): returns at once, before any lookup.
     * The work runs afterwards; its faults are logged, never shown.
     */
    request(typed: string, origin: ResetOrigin): void {
      if (pending.size >= MAX_PENDING) {
        logger.warn({ requestId: origin.requestId }, 'password reset request dropped: too many requests in progress');
        return;
      }
      const job: Promise<void> = work(typed, origin)
        .catch((err: unknown) => logger.error({ err, requestId: origin.requestId }, 'password reset request failed'))
        .finally(() => pending.delete(job));
      pending.add(job);
    },

    /**
     * The user of a live link, whether they must pass their second factor and whether a passkey may
     * pass it; `proof`: a passkey passed already (the form carries it on). Undefined for a bad link.
     */
    async open(token: string | undefined, origin: ResetOrigin, proof?: string): Promise<OpenLink | undefined> {
      const link = await linkOf(token);
      if (!link) {
        await failed('invalid_link', origin);
        return undefined;
      }
      const proved = provedByPasskey(link, proof);
      const needsCode = !proved && (await deps.mfa.hasFactor(link.user.id));
      return { user: link.user, needsCode, passkey: needsCode && (await deps.mfa.offersPasskey(link.user.id)), proved };
    },

    /**
     * The WebAuthn options of a live link's second step: the user's own passkeys, the challenge
     * stored for one use and bound to the user. Undefined for a bad link or a user without a passkey.
     */
    async passkeyOptions(token: string | undefined, origin: ResetOrigin) {
      const link = await linkOf(token);
      if (!link) {
        await failed('invalid_link', origin);
        return undefined;
      }
      if (!(await deps.mfa.offersPasskey(link.user.id))) return undefined;
      return deps.mfa.passkeys.authenticationOptions(link.user.id);
    },

    /**
     * The second step passed with a passkey (docs/password-reset-by-mail.md): the assertion is checked as at a sign-in's
     * second step (the brute-force policy counts it, its challenge is taken once), and the proof is
     * what the reset form carries on to `complete`. Nothing is claimed or written yet.
     */
    async passkey(f: { token?: string; state?: string; response?: string }, origin: ResetOrigin): Promise<ResetPasskeyOutcome> {
      const link = await linkOf(f.token);
      if (!link) {
        await failed('invalid_link', origin);
        return { ok: false, reason: 'invalid_link' };
      }
      const { user } = link;
      const retry = async (reason: string, message: string, status: number, retryAfter?: number): Promise<ResetPasskeyOutcome> => {
        await failed(reason, origin, user.id);
        return { ok: false, reason: 'retry', status, message, retryAfter };
      };
      const checked = await deps.signIn.passkeyStep({ state: f.state, response: f.response, user, amr: [], clientId: '', ...origin });
      if (checked.ok) return { ok: true, user, proof: passkeyProof(link) };
      if (checked.reason === 'throttled')
        return retry('throttled', `Too many attempts. Try again in ${checked.retryAfter} seconds.`, 429, checked.retryAfter);
      if (checked.reason === 'busy') return retry('busy', BUSY_WORDS, 503, checked.retryAfter);
      if (checked.reason === 'unavailable') {
        await failed('unavailable', origin, user.id);
        return { ok: false, reason: 'unavailable' };
      }
      return retry('invalid_passkey', 'The passkey was not accepted. Try again, or enter a code.', 401);
    },

    /**
     * Sets the new password of a live link: the two typed passwords agree, the second factor passes
     * (a code counted by the brute-force policy, or the proof of a passkey passed for this very link),
     * the link is claimed, then the password is written (the database hash, or the directory through
     * the chain); every session of the user ends, their tokens are revoked and every link of theirs
     * dies (users.setPassword). A refusal or an outage gives the link back.
     */
    async complete(
      f: { token?: string; password: string; confirm: string; code?: string; proof?: string },
      origin: ResetOrigin,
    ): Promise<ResetOutcome> {
      const link = await linkOf(f.token);
      if (!link) {
        await failed('invalid_link', origin);
        return { ok: false, reason: 'invalid_link' };
      }
      const { user, hash } = link;
      const retry = async (reason: string, message: string, status = 400, retryAfter?: number): Promise<ResetOutcome> => {
        await failed(reason, origin, user.id);
        return { ok: false, reason: 'retry', status, message, retryAfter };
      };
      if (f.password !== f.confirm) return retry('mismatch', 'The two passwords are not the same.');
      if (deps.users.keepsPassword(user)) {
        try {
          checkPassword(f.password);
        } catch {
          return retry('too_short', 'The new password must be 8 to 1024 characters.');
        }
      } else if (!f.password) {
        return retry('empty', 'Enter a new password.');
      }
      if (!provedByPasskey(link, f.proof) && (await deps.mfa.hasFactor(user.id))) {
        if (!f.code?.trim()) return retry('code_missing', 'Enter a code from your authenticator app, or a recovery code.', 401);
        const checked = await deps.signIn.secondStep({ user, code: f.code, amr: [], clientId: '', ...origin });
        if (!checked.ok) {
          if (checked.reason === 'throttled')
            return retry('throttled', `Too many attempts. Try again in ${checked.retryAfter} seconds.`, 429, checked.retryAfter);
          if (checked.reason === 'busy') return retry('busy', BUSY_WORDS, 503, checked.retryAfter);
          return retry('invalid_code', 'That code is not right. Try the current one, or a recovery code.', 401);
        }
      }
      if (!(await queries.claim(hash, clock.now()))) {
        await failed('invalid_link', origin, user.id);
        return { ok: false, reason: 'invalid_link' };
      }
      try {
        await deps.users.setPassword(user.id, f.password, {
          userId: user.id,
          clientId: null,
          via: 'password_reset',
          ip: origin.ip,
          requestId: origin.requestId,
        });
      } catch (err) {
        await queries.unclaim(hash);
        if (err instanceof PasswordRefused) return retry('refused', err.words);
        if (err instanceof BackendUnavailableError) {
          await failed('unavailable', origin, user.id);
          return { ok: false, reason: 'unavailable' };
        }
        throw err;
      }
      await audit.record({
        kind: 'password_reset.done',
        userId: user.id,
        ip: origin.ip,
        requestId: origin.requestId,
        details: { backend: user.backend },
      });
      return { ok: true, user };
    },

    /**
     * An administrator mails `userId` a reset link (GraphQL `sendPasswordReset`, the helpdesk's): the
     * link and the mail of "Forgot your password?", sent now, with no throttle (the act is audited
     * with its actor). Refused in words when resets by mail are off, or the user cannot get a link
     * (no email, disabled, a password Latchkey cannot set). False when the mail server did not take it.
     */
    async sendTo(userId: string, actor: Actor): Promise<boolean> {
      if (!config.passwordReset.enabled || !deps.mailer) {
        throw new InputError('userId', 'password resets by mail are off here: they need passwordReset.enabled with smtp.url and smtp.from');
      }
      const user = await deps.users.find(userId);
      if (!user) throw new NotFoundError('userId', `no user ${userId}`);
      if (!user.email) throw new InputError('userId', `user ${user.username} has no email address to send a reset link to`);
      if (user.disabled) throw new InputError('userId', `user ${user.username} is disabled: enable them first`);
      const { username, backend } = user;
      if (!resettable(user)) {
        throw new InputError(
          'userId',
          `the password of user ${username} cannot be set here: backend "${backend}" does not allow password resets`,
        );
      }
      const origin = { ip: actor.ip ?? undefined, requestId: actor.requestId ?? undefined };
      const token = randomToken(32);
      const now = clock.now();
      await queries.insert(hashToken(token), user.id, now, now + RESET_TTL_MS);
      await audit.change('user.send_password_reset', actor, { userId: user.id });
      return mail(user, token, origin, true);
    },

    /** Whether some backend invites its users: the reset page then serves invitations even with resets off. */
    invitations: deps.mailer !== undefined && config.identity.backends.some((b) => invites(b.id)),

    /**
     * Invites `user` (docs/scim-provisioning.md "How SCIM users sign in"): a link to set a password,
     * good for 7 days, by mail; resolves once the mail server took it or refused it (a refusal is
     * logged and audited, not thrown). The user is read again first: nothing for one not to invite
     * (enabled, an email, no password, a backend with `invite: true`). The durable queue of SCIM
     * invitations (src/scim/invitations.ts) calls it, one at a time.
     */
    async invite(user: Pick<User, 'id'>, origin: Origin = {}): Promise<void> {
      if (!deps.mailer) return;
      await sendInvitation(user.id, origin);
    },

    /** Waits for the requests still at work (the server's shutdown; tests). */
    async settled(): Promise<void> {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },

    close(): void {
      deps.mailer?.close();
    },
  };
}

export type PasswordResetService = ReturnType<typeof passwordResetService>;
