import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { hashPassword } from '../crypto/passwords.ts';
import { randomToken } from '../crypto/tokens.ts';
import { SYSTEM_ACTOR, type Actor, type AuditLog } from '../audit/record.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import type { Transaction } from '../db/transaction.ts';
import type { SessionStore } from '../login/sessions.ts';
import type { ResetQueries } from '../password-reset/reset-queries.ts';
import type { UserQueries } from './queries.ts';
import type { User } from './model.ts';
import { directoryPasswordFits, MAX_PASSWORD, PasswordRefused, refusalWords } from './password-refusals.ts';
import { directoryPasswordChanges, type DirectoryPasswords } from './directory-password.ts';
import { clock } from '../clock.ts';
import { knownGroups } from '../access/groups.ts';
import { leavers } from './leavers.ts';
import { checkRolesChange } from '../admin-roles/rules.ts';

export interface CreateUserInput {
  username: string;
  password: string;
  email?: string | null;
  displayName?: string | null;
  roles?: string[];
  groups?: string[];
  /** A JSON object of strings or lists of strings (docs/access-and-claims.md); checked by the service. */
  attributes?: unknown;
}

export interface UpdateUserInput {
  username?: string | null;
  email?: string | null;
  displayName?: string | null;
  roles?: string[] | null;
  disabled?: boolean | null;
  /** Database-backend users only: a JSON object of strings or lists of strings; checked by the service. */
  attributes?: unknown;
}

function checkUsername(raw: string): string {
  const username = raw.trim();
  if (!/^[^\s\x00-\x1f]{1,255}$/.test(username)) throw new InputError('username', 'must be 1 to 255 characters, no spaces');
  return username;
}

/** A database user's new password: the rule Latchkey itself applies (a directory applies its own policy). */
export function checkPassword(password: string): void {
  if (password.length < 8 || password.length > MAX_PASSWORD) throw new InputError('password', `must be 8 to ${MAX_PASSWORD} characters`);
}

/** A directory user's new password: the directory's policy decides; only what no directory takes is refused here. */
function checkDirectoryPassword(password: string): void {
  if (!directoryPasswordFits(password)) throw new InputError('password', `must be 1 to ${MAX_PASSWORD} characters`);
}

function checkEmail(email: string | null | undefined): string | null | undefined {
  if (email === '') return null;
  if (email == null) return email;
  if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email))
    throw new InputError('email', `${JSON.stringify(email)} is not an email address`);
  return email;
}

function checkDisplayName(name: string | null | undefined): string | null {
  const trimmed = name?.trim();
  if (!trimmed) return null;
  if (trimmed.length > 255 || /[\x00-\x1f\x7f]/.test(trimmed))
    throw new InputError('displayName', 'must be at most 255 characters, no control characters');
  return trimmed;
}

/** docs/access-and-claims.md: the bounds of a database user's groups and attributes. */
const GROUP_LIMITS = { name: 256, count: 200 } as const;
const ATTRIBUTE_LIMITS = { name: 128, count: 64, value: 2048, values: 200 } as const;

const CONTROL = /[\x00-\x1f\x7f]/;

/**
 * A database user's groups (docs/access-and-claims.md): 1 to 256 characters each, no
 * control characters, at most 200; spaces around a name dropped; a name given twice (compared without
 * case, as access policies compare them) kept once.
 */
function checkGroups(groups: readonly string[]): string[] {
  const out = new Map<string, string>();
  for (const raw of groups) {
    const name = raw.trim();
    if (name.length < 1 || name.length > GROUP_LIMITS.name || CONTROL.test(name)) {
      throw new InputError(
        'groups',
        `${JSON.stringify(raw.slice(0, 64))} is not a group name: 1 to ${GROUP_LIMITS.name} characters, no control characters`,
      );
    }
    if (!out.has(name.toLowerCase())) out.set(name.toLowerCase(), name);
  }
  if (out.size > GROUP_LIMITS.count) throw new InputError('groups', `at most ${GROUP_LIMITS.count} groups`);
  return [...out.values()];
}

/** A JSON object: parsed from variables (Object's prototype) or from a query's literal (none). */
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && [Object.prototype, null].includes(Object.getPrototypeOf(v));

/**
 * A database user's attributes (docs/access-and-claims.md): a JSON object of
 * at most 64 attributes, each named by 1 to 128 characters, whose value is a string or a list of
 * strings (at most 200), each string at most 2048 characters. Anything else is refused, naming the
 * attribute.
 */
function checkAttributes(raw: unknown): Record<string, string | string[]> {
  if (!isPlainObject(raw)) throw new InputError('attributes', 'must be a JSON object of strings or lists of strings');
  const entries = Object.entries(raw);
  if (entries.length > ATTRIBUTE_LIMITS.count) throw new InputError('attributes', `at most ${ATTRIBUTE_LIMITS.count} attributes`);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of entries) {
    if (name.length < 1 || name.length > ATTRIBUTE_LIMITS.name || CONTROL.test(name)) {
      throw new InputError(
        'attributes',
        `${JSON.stringify(name.slice(0, 64))} is not an attribute name: 1 to ${ATTRIBUTE_LIMITS.name} characters, no control characters`,
      );
    }
    const list = Array.isArray(value) ? value : [value];
    if (Array.isArray(value) && value.length > ATTRIBUTE_LIMITS.values) {
      throw new InputError('attributes', `${name}: at most ${ATTRIBUTE_LIMITS.values} values`);
    }
    for (const v of list) {
      if (typeof v !== 'string') throw new InputError('attributes', `${name}: a value must be a string or a list of strings`);
      if (v.length > ATTRIBUTE_LIMITS.value)
        throw new InputError('attributes', `${name}: a value is at most ${ATTRIBUTE_LIMITS.value} characters`);
    }
    // Defined, not assigned: a name such as `__proto__` is an attribute like any other.
    Object.defineProperty(out, name, {
      value: Array.isArray(value) ? [...value] : value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function checkRoles(roles: string[]): string[] {
  for (const r of roles) if (!/^[\w:.-]{1,64}$/.test(r)) throw new InputError('roles', `${JSON.stringify(r)} is not a valid role name`);
  return [...new Set(roles)];
}

/**
 * Users: the built-in database backend's own (`localBackend`), and the local records of other
 * backends' users. Every change is one transaction with its audit event; the rules that go with a
 * change (a disabled user's or a new password's sessions and tokens stop at once) live here, so the
 * admin API and the CLI behave alike.
 */
/** What a change needs of a transaction (named here: the root that builds it imports this file). */
interface UserTransaction {
  queries: { users: UserQueries; resets: Pick<ResetQueries, 'discardAllOf'> };
  sessions: Pick<SessionStore, 'endAllOf'>;
  audit: Pick<AuditLog, 'change' | 'record'>;
}

export type { DirectoryPasswords } from './directory-password.ts';
export type { DirectoryPasswordChange } from './directory-password.ts';

export const userService = (
  queries: UserQueries,
  deps: {
    transaction: Transaction<UserTransaction>;
    localBackend: string;
    /**
     * Other backends whose users' password hashes Latchkey keeps, as the database backend's: the `scim`
     * backends (docs/scim-provisioning.md "How SCIM users sign in"). @default []
     */
    localPasswords?: readonly string[];
    directory?: DirectoryPasswords;
    upstreams?: readonly string[];
    /** Events outside a change's transaction: a directory's refusal or outage, where nothing was written. */
    audit: Pick<AuditLog, 'record'>;
    logger?: Logger;
  },
) => {
  const { localBackend, transaction, directory } = deps;
  const upstreams = deps.upstreams ?? [];
  /** Whether the user's password is a hash in their record (the database's and SCIM users), not a directory's. */
  const keepsPassword = (user: Pick<User, 'backend'>): boolean =>
    user.backend === localBackend || (deps.localPasswords ?? []).includes(user.backend);

  /**
   * A directory user's new password, written with the backend's own rights (docs/identity-backends.md: `passwordReset: true`).
   * A policy refusal is an `InputError` in the directory's words, and nothing is written; an outage
   * throws `BackendUnavailableError` (nothing is written then either).
   */
  async function writeToDirectory(user: User, password: string): Promise<void> {
    if (!directory?.canWritePassword(user, 'reset')) {
      throw new InputError(
        'password',
        `cannot be set here: backend "${user.backend}" does not allow password resets (its passwordReset is off)`,
      );
    }
    checkDirectoryPassword(password);
    const written = await directory.writePassword(user, { how: 'reset', newPassword: password });
    if (!written) throw new InputError('password', `cannot be set here: backend "${user.backend}" does not allow password resets`);
    if (!written.ok) throw new PasswordRefused(refusalWords(written));
  }

  return {
    localBackend,
    keepsPassword,
    ...leavers(transaction),
    ...directoryPasswordChanges({ directory, audit: deps.audit, logger: deps.logger, transaction }),
    find: queries.find,
    findByUsername: queries.findByUsername,
    page: queries.page,
    /** The groups Latchkey knows, from the users' records, by name (docs/access-and-claims.md). */
    groups: knownGroups(queries).page,

    async create(input: CreateUserInput, actor: Actor): Promise<User> {
      const username = checkUsername(input.username);
      checkPassword(input.password);
      checkEmail(input.email);
      const id = randomUUID();
      const now = clock.now();
      const user: User = {
        id,
        backend: localBackend,
        externalId: id,
        username,
        email: input.email ?? null,
        emailVerified: true,
        displayName: checkDisplayName(input.displayName),
        passwordHash: await hashPassword(input.password),
        roles: checkRoles(input.roles ?? []),
        groups: checkGroups(input.groups ?? []),
        attributes: input.attributes == null ? {} : checkAttributes(input.attributes),
        disabled: false,
        disabledBy: null,
        createdAt: now,
        updatedAt: now,
      };
      // Nobody gives a role they could not hold (docs/admin-api.md "Roles and permissions").
      if (actor.grant) checkRolesChange(actor.grant, [], user.roles);
      return transaction(async (tx) => {
        if (await tx.queries.users.findByUsername(localBackend, username)) throw new InputError('username', `${username} is taken`);
        await tx.queries.users.insert(user);
        if (user.email) await tx.queries.users.demoteClaimedEmail(user.email, id, upstreams);
        await tx.audit.change('user.create', actor, { userId: id });
        return user;
      });
    },

    /** Users of other backends are read-only here but for roles and disabled (their profile is the directory's). */
    update(id: string, input: UpdateUserInput, actor: Actor): Promise<User> {
      return transaction(async (tx) => {
        // Locked: the whole row is written back, so it must be the row as a sync pass, a leaver's
        // deprovisioning or a SCIM write committed it, not as it was before (docs/directory-sync.md).
        const user = await tx.queries.users.find(id, { lock: true });
        if (!user) throw new NotFoundError('id', `no user ${id}`);
        const local = user.backend === localBackend;
        const next = { ...user, updatedAt: clock.now() };
        for (const field of ['username', 'email', 'displayName', 'attributes'] as const) {
          if (input[field] !== undefined && !local) {
            throw new InputError(field, `is read-only: the user comes from backend "${user.backend}"`);
          }
        }
        if (input.username != null) {
          next.username = checkUsername(input.username);
          const clash = await tx.queries.users.findByUsername(localBackend, next.username);
          if (clash && clash.id !== id) throw new InputError('username', `${next.username} is taken`);
        }
        if (input.email !== undefined) next.email = checkEmail(input.email) ?? null;
        if (input.displayName !== undefined) next.displayName = checkDisplayName(input.displayName);
        if (input.roles != null) next.roles = checkRoles(input.roles);
        if (actor.grant) checkRolesChange(actor.grant, user.roles, next.roles);
        // An administrator's disabling is theirs: a directory sync never undoes it (docs/directory-sync.md).
        if (input.disabled != null) [next.disabled, next.disabledBy] = input.disabled ? [true, 'admin'] : [false, null];
        if (input.attributes !== undefined) next.attributes = input.attributes === null ? {} : checkAttributes(input.attributes);
        await tx.queries.users.update(next);
        // A disabled user's sessions, codes and tokens stop working now, not when they expire.
        const disabling = next.disabled && !user.disabled;
        if (disabling) await tx.sessions.endAllOf(id, { actor });
        // A reset link mailed to the old address, or outstanding when the user was disabled, dies with
        // the change: re-enabling the user later does not bring it back (docs/decisions.md).
        if (disabling || next.email !== user.email) await tx.queries.resets.discardAllOf(id);
        if (next.email && next.email !== user.email) await tx.queries.users.demoteClaimedEmail(next.email, id, upstreams);
        await tx.audit.change('user.update', actor, { userId: id });
        return next;
      });
    },

    /**
     * A database user's groups, replaced whole (docs/access-and-claims.md); other
     * backends' users get theirs from the backend at each sign-in, so theirs are refused here.
     */
    setGroups(id: string, groups: readonly string[], actor: Actor): Promise<User> {
      return transaction(async (tx) => {
        // Locked, as in `update`: the whole row is written back.
        const user = await tx.queries.users.find(id, { lock: true });
        if (!user) throw new NotFoundError('id', `no user ${id}`);
        if (user.backend !== localBackend) {
          throw new InputError(
            'groups',
            `cannot be set here: the groups of a user of backend "${user.backend}" come from that backend at each sign-in`,
          );
        }
        const next = { ...user, groups: checkGroups(groups), updatedAt: clock.now() };
        await tx.queries.users.update(next);
        const held = (list: string[]) => new Set(list.map((g) => g.toLowerCase()));
        const [before, after] = [held(user.groups), held(next.groups)];
        await tx.audit.change(
          'user.set_groups',
          actor,
          { userId: id },
          {
            added: next.groups.filter((g) => !before.has(g.toLowerCase())),
            removed: user.groups.filter((g) => !after.has(g.toLowerCase())),
          },
        );
        return next;
      });
    },

    /**
     * A new password for a user whose hash Latchkey keeps (a database or SCIM user), else written to their
     * directory (`writeToDirectory`); every session, code and token the user holds stops working
     * (docs/decisions.md), but `keep`: the session that changed it, at /account. Every reset link of the user dies
     * with it, the one a reset by mail used included: one reset is enough, older mails stop working.
     */
    async setPassword(id: string, password: string, actor: Actor, keep?: string): Promise<void> {
      const owner = await queries.find(id);
      if (!owner) throw new NotFoundError('id', `no user ${id}`);
      if (!keepsPassword(owner)) {
        // The directory holds the password: written there first (it cannot join our transaction), then
        // the sessions and tokens end as for a database user.
        await writeToDirectory(owner, password);
        await transaction(async (tx) => {
          await tx.sessions.endAllOf(id, { except: keep, actor });
          await tx.queries.resets.discardAllOf(id);
          await tx.audit.change('user.set_password', actor, { userId: id }, { backend: owner.backend });
        });
        return;
      }
      checkPassword(password);
      const passwordHash = await hashPassword(password);
      await transaction(async (tx) => {
        // Locked, as in `update`: a SCIM user's deactivation committed meanwhile is not undone.
        const user = await tx.queries.users.find(id, { lock: true });
        if (!user) throw new NotFoundError('id', `no user ${id}`);
        await tx.queries.users.update({ ...user, passwordHash, updatedAt: clock.now() });
        await tx.sessions.endAllOf(id, { except: keep, actor });
        await tx.queries.resets.discardAllOf(id);
        await tx.audit.change('user.set_password', actor, { userId: id });
      });
    },

    /** Deletes a user; their sessions, codes, tokens and consents go with them (ON DELETE CASCADE). */
    remove(id: string, actor: Actor): Promise<boolean> {
      return transaction(async (tx) => {
        // Its sessions end through the one funnel first, so the clients are told (back-channel logout).
        await tx.sessions.endAllOf(id, { actor });
        const removed = await tx.queries.users.remove(id);
        if (removed) await tx.audit.change('user.delete', actor, { userId: id });
        return removed;
      });
    },

    /**
     * docs/configuration.md: when no admin exists, create one. Returns the generated password when none was given,
     * for the caller to print once; it is never logged or stored in plain text.
     */
    async ensureAdmin(username: string, password?: string): Promise<{ created: boolean; generatedPassword?: string }> {
      if (await queries.anyWithRole('admin')) return { created: false };
      const generated = password ? undefined : randomToken(18);
      const existing = await queries.findByUsername(localBackend, username);
      if (existing) {
        const passwordHash = await hashPassword(password ?? generated!);
        // Read again, locked, in the write's transaction: the hash took a while, and the whole row is written back.
        await transaction(async (tx) => {
          const user = await tx.queries.users.find(existing.id, { lock: true });
          if (!user) throw new NotFoundError('username', `${username} was deleted meanwhile`);
          await tx.queries.users.update({ ...user, roles: [...new Set([...user.roles, 'admin'])], passwordHash, updatedAt: clock.now() });
        });
      } else {
        await this.create({ username, password: password ?? generated!, roles: ['admin'], displayName: 'Administrator' }, SYSTEM_ACTOR);
      }
      return { created: true, generatedPassword: generated };
    },
  };
};

export type UserService = ReturnType<typeof userService>;
