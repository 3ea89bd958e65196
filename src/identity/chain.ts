import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { UserQueries } from '../users/queries.ts';
import type { User } from '../users/model.ts';
import { Breaker } from './breaker.ts';
import {
  BackendUnavailableError,
  type AccountRefusal,
  type Identity,
  type IdentityBackend,
  type PasswordCheck,
  type PasswordWrite,
} from './contract.ts';
import { clock } from '../clock.ts';
import { verifyPassword } from '../crypto/passwords.ts';

export interface ChainMember {
  id: string;
  plugin: string;
  backend: IdentityBackend;
}

export type SignInResult =
  /** `passwordExpiresAt`: the backend's warning that the password expires soon (docs/identity-backends.md). */
  | { ok: true; user: User; passwordExpiresAt?: number }
  /**
   * `backend`: the backend that owns the account, when one does. `skipped`: backends that were down
   * before that answer, whose user the account may be (an outage never counts against them).
   */
  | { ok: false; reason: 'invalid_credentials' | AccountRefusal; user?: User; backend?: string; skipped: string[] }
  | { ok: false; reason: 'unavailable'; backends: string[] };

const sameFields = (
  user: User,
  fields: Pick<
    User,
    'username' | 'email' | 'emailVerified' | 'displayName' | 'groups' | 'roles' | 'attributes' | 'disabled' | 'disabledBy'
  >,
) =>
  user.username === fields.username &&
  user.email === fields.email &&
  user.emailVerified === fields.emailVerified &&
  user.displayName === fields.displayName &&
  user.disabled === fields.disabled &&
  user.disabledBy === fields.disabledBy &&
  JSON.stringify(user.groups) === JSON.stringify(fields.groups) &&
  JSON.stringify(user.roles) === JSON.stringify(fields.roles) &&
  JSON.stringify(user.attributes) === JSON.stringify(fields.attributes);

/** Longer than this and `/readyz` reports the backend down (probes give about a second). */
const HEALTH_TIMEOUT_MS = 800;

export interface ChainOptions {
  /**
   * How often a backend marked down is probed (`health()`) to see whether it answers again: the
   * longest its users wait for sign-ins to work after it is back. @default 2000
   */
  probeIntervalMs?: number;
  /** A probe that has not answered by then counts as "still down". @default 30000 */
  probeTimeoutMs?: number;
  /**
   * Called when a sign-in brings a user a new email from their backend: reset links mailed to the old
   * address must die with it (docs/decisions.md "Reset links and the admin's remedies").
   */
  emailChanged?: (userId: string) => Promise<void>;
  /** The upstreams' ids: their users lose a verified email that a backend's user is given (docs/decisions.md "Upstream emails"). */
  upstreams?: readonly string[];
}

/**
 * The backends in their configured order. The first that holds the username owns it: its answer is
 * final, and the user is never tried against a later backend under the same name. A backend that is
 * down is skipped (later ones may still hold the user); if nobody answered for the user and one was
 * down, the result is `unavailable`, never a failed login. A backend found down stays skipped, without
 * being asked, until a probe finds it answering (see `Breaker`, half-open included).
 */
export class IdentityChain {
  private readonly breakers = new Map<string, Breaker>();

  constructor(
    readonly members: ChainMember[],
    private readonly users: UserQueries,
    private readonly logger: Logger,
    private readonly options: ChainOptions = {},
  ) {
    for (const m of members) {
      const health = m.backend.health?.bind(m.backend);
      this.breakers.set(
        m.id,
        new Breaker({
          id: m.id,
          probe: health ?? (async () => true),
          intervalMs: options.probeIntervalMs ?? 2000,
          probeTimeoutMs: options.probeTimeoutMs ?? 30_000,
          logger,
        }),
      );
    }
  }

  /**
   * One call to a backend through its breaker. Skipped (`BackendUnavailableError`, no log line) while
   * the backend is marked down and a probe started for this call does not find it back (half-open);
   * an outage the call meets is logged with its cause and trips the breaker.
   */
  private async ask<T>(member: ChainMember, call: () => Promise<T>): Promise<T> {
    const breaker = this.breakers.get(member.id)!;
    if (!(await breaker.admit()))
      throw new BackendUnavailableError(`identity backend "${member.id}" is down (waiting for a probe to find it answering)`);
    try {
      return await call();
    } catch (err) {
      if (err instanceof BackendUnavailableError) {
        this.logger.warn({ backend: member.id, err: err.message }, 'identity backend unavailable');
        breaker.trip();
      }
      throw err;
    }
  }

  async signIn(typed: string, password: string): Promise<SignInResult> {
    // Directories ignore leading and trailing spaces in names; so does every backend here.
    const username = typed.trim();
    // An empty password is refused here, before any backend: an LDAP bind with one is anonymous.
    if (!username || !password) return { ok: false, reason: 'invalid_credentials', skipped: [] };
    const down: string[] = [];
    let decoy = false;
    for (const member of this.members) {
      let check: PasswordCheck;
      try {
        check = await this.ask(member, () => member.backend.checkPassword(username, password));
      } catch (err) {
        if (!(err instanceof BackendUnavailableError)) throw err;
        down.push(member.id);
        continue;
      }
      if (!check.identity) {
        decoy ||= check.decoy === true;
        continue;
      }
      if (!check.validPassword) return { ok: false, reason: 'invalid_credentials', backend: member.id, skipped: down };
      const user = await this.provision(member.id, check.identity);
      // Refused if an administrator disabled the account here, or the backend refuses it (and says why).
      if (user.disabled) return { ok: false, reason: 'disabled', user, backend: member.id, skipped: down };
      if (check.identity.disabled)
        return { ok: false, reason: check.identity.refusal ?? 'disabled', user, backend: member.id, skipped: down };
      return { ok: true, user, ...(check.passwordExpiresAt !== undefined ? { passwordExpiresAt: check.passwordExpiresAt } : {}) };
    }
    // No backend answers for the name: one decoy hash, owed by the backends that would have hashed one
    // for their "not mine", so that the answer takes as long as a wrong password of theirs.
    if (decoy) await verifyPassword(null, password);
    if (down.length > 0) return { ok: false, reason: 'unavailable', backends: down };
    return { ok: false, reason: 'invalid_credentials', skipped: [] };
  }

  /**
   * The user a backend's Kerberos client principal names (docs/identity-backends.md "Desktop single sign-on"): the
   * KDC vouched for them, so there is no password to check, and no other backend is asked (the ticket's
   * realm chose the backend). The local record is provisioned, and the account refused, as at a
   * password sign-in; none found is `invalid_credentials`.
   */
  async signInByPrincipal(backendId: string, principal: string): Promise<SignInResult> {
    const member = this.members.find((m) => m.id === backendId);
    const find = member?.backend.findByPrincipal?.bind(member.backend);
    if (!member || !find) return { ok: false, reason: 'invalid_credentials', skipped: [] };
    let identity: Identity | null;
    try {
      identity = await this.ask(member, () => find(principal));
    } catch (err) {
      if (!(err instanceof BackendUnavailableError)) throw err;
      return { ok: false, reason: 'unavailable', backends: [member.id] };
    }
    if (!identity) return { ok: false, reason: 'invalid_credentials', backend: member.id, skipped: [] };
    const user = await this.provision(member.id, identity);
    if (user.disabled) return { ok: false, reason: 'disabled', user, backend: member.id, skipped: [] };
    if (identity.disabled) return { ok: false, reason: identity.refusal ?? 'disabled', user, backend: member.id, skipped: [] };
    return { ok: true, user };
  }

  /** A backend's user now holds their email verified: no upstream account keeps it verified too. */
  private async giveEmail(user: User, options: { claimedEmail?: boolean }): Promise<void> {
    if (user.email && !options.claimedEmail) await this.users.demoteClaimedEmail(user.email, user.id, this.options.upstreams ?? []);
  }

  /**
   * The local record of a backend's (or an upstream's, docs/upstream-identity-providers.md) user: created on first sign-in,
   * refreshed at each one, keyed by (backend id, external id). A directory's name belongs to the
   * entry that has it now (`freeUsername`); an upstream's users never take a name from each other:
   * with `fallbackUsername`, a user whose name another holds gets that one instead. With `claimedEmail`
   * (an upstream's), the email is verified only while no other account holds it verified.
   */
  async provision(
    backendId: string,
    identity: Identity,
    options: { fallbackUsername?: string; claimedEmail?: boolean } = {},
  ): Promise<User> {
    if (identity.userId) {
      const user = await this.users.find(identity.userId);
      if (user) return user;
    }
    const now = clock.now();
    const existing = await this.users.findByExternalId(backendId, identity.externalId);
    const id = existing?.id ?? randomUUID();
    const fallback = options.fallbackUsername;
    const username =
      fallback === undefined || existing?.username === identity.username
        ? identity.username
        : await this.freeName(backendId, identity, [identity.username, fallback], id);
    const email = identity.email ?? null;
    const fields = {
      username,
      email,
      // An address only claimed (an upstream's) that another account holds verified is kept unverified,
      // checked at every sign-in: verified emails are unique across accounts (docs/decisions.md "Upstream emails").
      emailVerified: !(options.claimedEmail && email && (await this.users.holdsVerifiedEmail(email, id))),
      displayName: identity.displayName ?? null,
      groups: identity.groups ?? [],
      // A backend that reports roles (LDAP's adminGroups) owns them; one that does not leaves them to
      // the administrators.
      roles: identity.roles ?? existing?.roles ?? [],
      // A backend that reports attributes (a directory's extraAttributes, an upstream's extraClaims)
      // owns them; the database backend's are the administrators' (docs/access-and-claims.md).
      attributes: identity.attributes ?? existing?.attributes ?? {},
      // The local flag is the administrator's: a directory's "disabled" refuses the sign-in without
      // being copied, so re-enabling the account in the directory is enough to let the user back in.
      // Only a directory sync's disabling (a leaver, docs/directory-sync.md) is the directory's,
      // and a backend that now answers for the user enabled undoes it.
      ...(existing?.disabledBy === 'directory' && !identity.disabled
        ? { disabled: false, disabledBy: null }
        : { disabled: existing?.disabled ?? false, disabledBy: existing?.disabledBy ?? null }),
    };
    if (existing) {
      // Most sign-ins change nothing: then there is nothing to write.
      if (sameFields(existing, fields)) return existing;
      if (existing.username !== fields.username && fallback === undefined) await this.freeUsername(backendId, identity);
      // Only what the backend reports is written, and a directory leaver's return moves the account
      // state only from "disabled by the directory": an administrator's change committed since the
      // read above (a disabling, roles) stays (the users' queries say why).
      await this.users.updateProfile(existing.id, {
        username: fields.username,
        email: fields.email,
        emailVerified: fields.emailVerified,
        displayName: fields.displayName,
        groups: fields.groups,
        ...(identity.roles ? { roles: identity.roles } : {}),
        ...(identity.attributes ? { attributes: identity.attributes } : {}),
        updatedAt: now,
      });
      if (existing.disabledBy === 'directory' && !fields.disabled)
        await this.users.moveState(
          existing.id,
          { disabled: true, disabledBy: 'directory' },
          { disabled: false, disabledBy: null, updatedAt: now },
        );
      // Read back: the record as it is now, with whatever else changed meanwhile.
      const user = (await this.users.find(existing.id)) ?? { ...existing, ...fields, updatedAt: now };
      if (existing.email !== user.email) {
        await this.options.emailChanged?.(user.id);
        await this.giveEmail(user, options);
      }
      return user;
    }
    if (fallback === undefined) await this.freeUsername(backendId, identity);
    const user: User = {
      id,
      backend: backendId,
      externalId: identity.externalId,
      passwordHash: null,
      createdAt: now,
      updatedAt: now,
      ...fields,
    };
    try {
      await this.users.insert(user);
      await this.giveEmail(user, options);
    } catch (err) {
      // Two first sign-ins at once: the other one created the record.
      const raced = await this.users.findByExternalId(backendId, identity.externalId);
      if (!raced) throw err;
      return raced;
    }
    return user;
  }

  /** The first of `names` no other user of the backend holds; else the last one made unique by the record's id. */
  private async freeName(backendId: string, identity: Identity, names: string[], id: string): Promise<string> {
    for (const name of names) {
      const holder = await this.users.findByUsername(backendId, name);
      if (!holder || holder.externalId === identity.externalId) return name;
    }
    return `${names.at(-1)}~${id}`;
  }

  /**
   * A directory may give a name to a new entry (a new id) after the old one was deleted, or rename
   * someone. The stale local record holding the name is renamed and disabled: the name belongs to the
   * entry the directory has now, and the old record's tokens and refresh grants stop working.
   */
  private async freeUsername(backendId: string, identity: Identity): Promise<void> {
    const holder = await this.users.findByUsername(backendId, identity.username);
    if (!holder || holder.externalId === identity.externalId) return;
    this.logger.warn(
      { backend: backendId, username: identity.username, staleUserId: holder.id },
      'username now belongs to another directory entry; retiring the old local record',
    );
    // The name and the state alone: an administrator's disabling of the old record stays theirs.
    const now = clock.now();
    await this.users.rename(holder.id, `${holder.username}~${holder.id}`, now);
    await this.users.moveState(holder.id, { disabled: false }, { disabled: true, disabledBy: 'directory', updatedAt: now });
  }

  /**
   * Re-reads a user from the backend that owns them (for the refresh grant). Null when the backend no
   * longer has them or has disabled them; the user unchanged when the backend cannot refresh.
   * Throws `BackendUnavailableError` when the backend is down.
   */
  async refresh(user: User): Promise<User | null> {
    const member = this.members.find((m) => m.id === user.backend);
    if (!member?.backend.refresh) return user;
    const refresh = member.backend.refresh.bind(member.backend);
    const identity = await this.ask(member, () => refresh({ username: user.username, externalId: user.externalId }));
    if (!identity || identity.disabled) return null;
    const fresh = await this.provision(member.id, identity);
    return fresh.disabled ? null : fresh;
  }

  /**
   * The user a typed sign-in name names, for a reset by mail (docs/identity-backends.md) of a directory user who has
   * never signed in here: the first backend, in chain order, that can look users up and holds the
   * name owns it, as at sign-in. Undefined when none holds it, when that backend cannot reset
   * passwords, refuses the account, or has no email for it; otherwise the user, given the local record
   * a first sign-in would give. A backend that is down is passed over: the reset then sends nothing,
   * as for an unknown name. One lookup at a time in a process: they are anonymous requests' work, on
   * the directory connections sign-ins use.
   */
  lookup(typed: string): Promise<User | undefined> {
    const run = () => this.lookupNow(typed.trim());
    const next = this.lookups.then(run, run);
    this.lookups = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  private lookups: Promise<void> = Promise.resolve();

  private async lookupNow(username: string): Promise<User | undefined> {
    if (!username) return undefined;
    for (const member of this.members) {
      const lookup = member.backend.lookup?.bind(member.backend);
      if (!lookup) continue;
      let identity: Identity | null;
      try {
        identity = await this.ask(member, () => lookup(username));
      } catch (err) {
        if (!(err instanceof BackendUnavailableError)) throw err;
        continue;
      }
      if (!identity) continue;
      if (identity.disabled || !identity.email || !member.backend.resetPassword) return undefined;
      return this.provision(member.id, identity);
    }
    return undefined;
  }

  /** Whether the user's backend lets them change (`change`) or have reset (`reset`) their password (docs/identity-backends.md). */
  canWritePassword(user: User, how: 'change' | 'reset'): boolean {
    const backend = this.members.find((m) => m.id === user.backend)?.backend;
    return Boolean(how === 'change' ? backend?.changePassword : backend?.resetPassword);
  }

  /**
   * Writes a password through the user's backend (docs/identity-backends.md): `change` as the user with their old
   * password, `reset` with the backend's own rights. Undefined when the backend cannot; throws
   * `BackendUnavailableError` when it is down (nothing is written then).
   */
  async writePassword(
    user: User,
    write: { how: 'change'; oldPassword: string; newPassword: string } | { how: 'reset'; newPassword: string },
  ): Promise<PasswordWrite | undefined> {
    const member = this.members.find((m) => m.id === user.backend);
    if (!member) return undefined;
    const known = { username: user.username, externalId: user.externalId };
    const { backend } = member;
    if (write.how === 'change')
      return backend.changePassword && this.ask(member, () => backend.changePassword!(known, write.oldPassword, write.newPassword));
    return backend.resetPassword && this.ask(member, () => backend.resetPassword!(known, write.newPassword));
  }

  /**
   * Each backend's state for `/readyz` and the `latchkey_identity_backend_up` metric. A backend marked
   * down is reported down without being asked (its probe is asking). Any other that has not answered
   * within `HEALTH_TIMEOUT_MS` is reported down: a hung directory must not make the probe itself time
   * out (load balancers give readiness probes about a second) and take the node out of service.
   */
  async health(): Promise<Record<string, 'up' | 'down'>> {
    const entries = await Promise.all(
      this.members.map(async (m) => {
        if (this.breakers.get(m.id)!.down) return [m.id, 'down'] as const;
        if (!m.backend.health) return [m.id, 'up'] as const;
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), HEALTH_TIMEOUT_MS)));
        try {
          return [m.id, (await Promise.race([m.backend.health(), late])) ? 'up' : 'down'] as const;
        } catch {
          return [m.id, 'down'] as const;
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return Object.fromEntries(entries);
  }

  async close(): Promise<void> {
    for (const b of this.breakers.values()) b.stop();
    await Promise.all(this.members.map((m) => m.backend.close?.()));
  }
}
