/**
 * The identity backend contract: what a plugin author implements. A backend checks passwords for the
 * users it holds. A wrong password or an unknown user is an answer; only an outage is an error, and it
 * must be thrown as `BackendUnavailableError` so that it is never counted as a failed login.
 */
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Database } from '../db/database.ts';

/**
 * Why an account whose password was right is refused; each is told to the user as such. A backend
 * sets one only when it knows the password was right: it is a fact about the account. The one
 * exception is a directory that refuses an account an administrator disabled before it looks at any
 * password (389 DS's "Account inactivated"): nothing then tells a right password from a wrong one.
 */
export type AccountRefusal = 'disabled' | 'account_expired' | 'password_expired' | 'password_must_change';

/** A user as a backend knows them. */
export interface Identity {
  /** Stable id within the backend (LDAP entryUUID / AD objectGUID; the database user's id). */
  externalId: string;
  username: string;
  email?: string | null;
  displayName?: string | null;
  groups?: string[];
  /** Roles the backend grants (e.g. `admin` for members of an LDAP admin group). */
  roles?: string[];
  /**
   * Attributes beyond the standard fields, for claim and attribute mappings (docs/access-and-claims.md):
   * a directory's `extraAttributes`, by name, a string or a list of strings. Undefined: the backend
   * reports none, and the record keeps what an administrator set.
   */
  attributes?: Record<string, string | string[]>;
  /** A disabled account: a correct password still does not sign in. */
  disabled?: boolean;
  /** With `disabled`: the reason, when the backend knows a more precise one than `disabled`. */
  refusal?: AccountRefusal;
  /** Set by the built-in database backend: the local user record already exists under this id. */
  userId?: string;
}

export interface PasswordCheck {
  /** Present when the backend holds a user of that name, whatever the password. */
  identity?: Identity;
  validPassword: boolean;
  /**
   * With a right password: when the password expires (ms since the epoch), if the directory says
   * (ppolicy's `timeBeforeExpiration`, AD's `msDS-UserPasswordExpiryTimeComputed`). docs/identity-backends.md's warning.
   */
  passwordExpiresAt?: number;
  /**
   * Without `identity`: the backend would hash a decoy password here, so that an unknown name takes
   * as long as a known one (the database backend does). The chain hashes one decoy for the whole
   * sign-in instead, and only when no backend answers for the name: a directory user behind the
   * database backend does not pay an argon2 hash for the database's "not mine" (docs/identity-backends.md).
   */
  decoy?: true;
}

/** Why a directory refused a new password (docs/identity-backends.md); each is told to the user in words. */
export type PasswordRefusal = 'wrong_password' | 'too_short' | 'in_history' | 'too_young' | 'complexity' | 'refused';

/** The answer to a password write. A refusal is an answer; an outage throws `BackendUnavailableError`. */
export type PasswordWrite = { ok: true } | { ok: false; refusal: PasswordRefusal; message: string };

/** A user a backend answered for before. */
export interface KnownUser {
  username: string;
  externalId: string;
}

/**
 * Desktop single sign-on (docs/identity-backends.md "Desktop single sign-on"): the HTTP service principal
 * whose tickets sign this backend's users in, and the keytab holding its keys.
 */
export interface KerberosSettings {
  /** The keytab file holding `servicePrincipal`'s keys (checked at start). */
  keytab: string;
  /** `HTTP/<host of PUBLIC_URL>@REALM`. */
  servicePrincipal: string;
  /** The realm of this backend's users: a ticket of a user of another realm is refused. */
  realm: string;
}

export interface IdentityBackend {
  /** Checks a password. Throws `BackendUnavailableError` when the backend cannot answer. */
  checkPassword(username: string, password: string): Promise<PasswordCheck>;
  /**
   * Optional: re-reads a user the backend answered for before, without a password (the refresh grant).
   * Returns null when the user is gone (or is now another entry). Throws `BackendUnavailableError`
   * when the backend cannot answer.
   */
  refresh?(known: KnownUser): Promise<Identity | null>;
  /**
   * Optional (docs/identity-backends.md): the user changes their own password, bound as themselves (OpenLDAP Password
   * Modify; AD `unicodePwd` delete + add). Present only when the backend's `passwordChange` is on.
   */
  changePassword?(known: KnownUser, oldPassword: string, newPassword: string): Promise<PasswordWrite>;
  /**
   * Optional (docs/identity-backends.md): a new password set with the backend's own rights (a reset by mail, an admin's
   * `setUserPassword`). Present only when the backend's `passwordReset` is on.
   */
  resetPassword?(known: KnownUser, newPassword: string): Promise<PasswordWrite>;
  /**
   * Optional (docs/identity-backends.md): the user a typed sign-in name names, read without a password; null when
   * none. How a reset by mail reaches a directory user who has never signed in here (so has no local
   * record yet); used only for a backend that also has `resetPassword`, but a backend without it
   * should still answer, so that the first backend holding a name owns it, as at sign-in. Throws
   * `BackendUnavailableError` when the backend cannot answer.
   */
  lookup?(username: string): Promise<Identity | null>;
  /**
   * Optional (docs/identity-backends.md "Desktop single sign-on"): present when the backend signs its users in with
   * Kerberos tickets, together with `findByPrincipal`. Only backends with it turn desktop single sign-on on.
   */
  kerberos?: KerberosSettings;
  /**
   * Optional, with `kerberos`: the user a Kerberos client principal (`name@REALM`, which the KDC vouched
   * for) names, read without a password, with the account's state (`disabled`, `refusal`); null when
   * none. Throws `BackendUnavailableError` when the backend cannot answer.
   */
  findByPrincipal?(principal: string): Promise<Identity | null>;
  /**
   * Reachable now? Used by `/readyz`, and by the chain's probe: a backend that threw
   * `BackendUnavailableError` is skipped, without being asked, until this answers true (a backend
   * without it is simply tried again after the probe interval). Keep it cheap and bounded.
   */
  health?(): Promise<boolean>;
  /** Optional (docs/directory-sync.md): the backend can be read whole, for directory sync. */
  sync?: SyncSource;
  close?(): Promise<void>;
}

/** A backend's side of directory sync (docs/directory-sync.md). */
export interface SyncSource {
  /** Seconds between passes; 0: only when asked (`latchkey sync`, GraphQL `syncBackend`). */
  interval: number;
  /** A pass that would deprovision more than this share of the backend's users deprovisions nobody. */
  maxLeaverShare: number;
  /**
   * Every user the backend holds, in batches, with their groups, attributes and account state
   * (`disabled`, `refusal`). Throws when it could not read them all (an outage, a size or time limit, a
   * page lost): a partial read must never pass for a whole one, or everyone it missed would leave.
   */
  listUsers(): AsyncIterable<Identity[]>;
}

/** A user record of Latchkey's own `users` table, as a backend that keeps its users there reads it. */
export interface LocalUser {
  id: string;
  externalId: string;
  username: string;
  email: string | null;
  displayName: string | null;
  /** argon2id (PHC string); null for a user without a local password. */
  passwordHash: string | null;
  roles: string[];
  groups: string[];
  disabled: boolean;
}

/** The records of Latchkey's own `users` table that belong to this backend (its id). */
export interface LocalUsers {
  /** The record whose username is `username` (compared without case); undefined when there is none. */
  find(username: string): Promise<LocalUser | undefined>;
  /** Throws when the database cannot answer (a backend's `health`). */
  ping(): Promise<unknown>;
}

export interface PluginContext {
  /** The backend's configured id (`identity.backends[].id`). */
  id: string;
  logger: Logger;
  /** This backend's records in Latchkey's own `users` table (the built-in `database` backend keeps its users there). */
  localUsers: LocalUsers;
  /** Latchkey's own database (knex and the prepared statements), for a backend that keeps tables of its own. */
  db: Database;
}

export interface IdentityPlugin<S extends z.ZodType = z.ZodType> {
  id: string;
  configSchema: S;
  create(config: z.infer<S>, ctx: PluginContext): IdentityBackend | Promise<IdentityBackend>;
}

/** Declares a plugin; `satisfies`-style typing of its config from the schema. */
export const defineIdentityPlugin = <S extends z.ZodType>(plugin: IdentityPlugin<S>): IdentityPlugin<S> => plugin;

const UNAVAILABLE = Symbol.for('latchkey.BackendUnavailableError');

export class BackendUnavailableError extends Error {
  /** Marks the error across copies of this module (a TypeScript plugin beside the bundled server). */
  readonly [UNAVAILABLE] = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BackendUnavailableError';
  }

  /**
   * `instanceof` that also recognises the class of another copy of this module: a plugin loaded from
   * its TypeScript source imports the contract from src/, while the server runs from dist/.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[UNAVAILABLE] === true;
  }
}
