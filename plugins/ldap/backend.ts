import { InvalidCredentialsError, type Entry, type SearchResult } from 'ldapts';
import type { Logger } from 'pino';
import {
  BackendUnavailableError,
  type AccountRefusal,
  type Identity,
  type IdentityBackend,
  type KerberosSettings,
  type KnownUser,
  type PasswordCheck,
  type PasswordWrite,
  type SyncSource,
} from '../../src/identity/plugin-kit.ts';
import { isInactivatedAccount } from './account-state.ts';
import { adBindRefusal, externalId, isAdLockout, passwordExpiry } from './attributes.ts';
import { directoryTypeOf, servicePassword, type LdapConfig } from './config.ts';
import { PasswordPolicyControl } from './password-policy.ts';
import { refused } from './password-refusals.ts';
import { adWriter, openLdapWriter, type PasswordWriter } from './password-writes.ts';
import { listDirectory } from './directory-listing.ts';
import { fillFilter } from './filter.ts';
import { isLockedOut, LOCKOUT_ATTRIBUTES, principalFilter } from './kerberos.ts';
import { resolveGroups, type Group } from './groups.ts';
import { binaryAttributes, toIdentity, userAttributes } from './identity.ts';
import { ConnectionPool, type LdapSession } from './pool.ts';
import { completeRanges } from './ranges.ts';
import { ServerList } from './servers.ts';

/**
 * The LDAP / Active Directory backend: search for exactly one entry with the service account, then
 * bind as that entry's DN with the user's password. Searches and user binds use separate pools, so a
 * user's bind never changes who a search connection is.
 */
export class LdapBackend implements IdentityBackend {
  private readonly searches: ConnectionPool;
  private readonly binds: ConnectionPool;
  private readonly passwords: PasswordWriter;
  /** Present only with `passwordChange` (docs/identity-backends.md): the chain offers what the backend has. */
  readonly changePassword?: (known: KnownUser, oldPassword: string, newPassword: string) => Promise<PasswordWrite>;
  /** Present only with `passwordReset`. */
  readonly resetPassword?: (known: KnownUser, newPassword: string) => Promise<PasswordWrite>;
  /** Directory sync's side (docs/directory-sync.md): every user, read whole or not at all. */
  readonly sync: SyncSource;
  /** Present only with `kerberos` (docs/identity-backends.md "Desktop single sign-on"), with `findByPrincipal`. */
  readonly kerberos?: KerberosSettings;
  readonly findByPrincipal?: (principal: string) => Promise<Identity | null>;

  constructor(
    private readonly config: LdapConfig,
    private readonly logger: Logger,
  ) {
    const servers = new ServerList(config.url);
    const tls = { ca: config.tls.ca, rejectUnauthorized: config.tls.rejectUnauthorized };
    const common = { servers, size: config.poolSize, timeoutMs: config.timeoutMs, startTLS: config.startTLS, tls, logger };
    const password = servicePassword(config);
    this.searches = new ConnectionPool({
      ...common,
      name: 'search',
      prepare: config.bindDN ? (s) => s.bind(config.bindDN!, password!) : undefined,
    });
    this.binds = new ConnectionPool({ ...common, name: 'bind' });
    const pools = { searches: this.searches, binds: this.binds };
    this.passwords = directoryTypeOf(config) === 'activeDirectory' ? adWriter(pools) : openLdapWriter(pools);
    if (config.passwordChange)
      this.changePassword = (known, oldPassword, newPassword) =>
        this.write(known, (dn) => this.passwords.change(dn, oldPassword, newPassword));
    if (config.passwordReset) this.resetPassword = (known, newPassword) => this.write(known, (dn) => this.passwords.reset(dn, newPassword));
    if (config.kerberos) {
      const { keytab, servicePrincipal, realm } = config.kerberos;
      this.kerberos = { keytab, servicePrincipal, realm };
      this.findByPrincipal = (principal) => this.principal(principal);
    }
    this.sync = {
      interval: config.sync.interval,
      maxLeaverShare: config.sync.maxLeaverShare,
      listUsers: () => listDirectory(config, this.searches, logger),
    };
  }

  /** A password write to the entry of a known user: found again by name, and only if it is still the same entry. */
  private async write(known: KnownUser, fn: (dn: string) => Promise<PasswordWrite>): Promise<PasswordWrite> {
    // Checked before any bind: an LDAP bind with an empty password is anonymous.
    const entry = await this.searches.use((s) => this.findUser(s, known.username));
    if (!entry || externalId(entry, this.config.userSearch.idAttr) !== known.externalId) {
      return refused('refused', 'The account is no longer in the directory.');
    }
    return fn(entry.dn);
  }

  async checkPassword(username: string, password: string): Promise<PasswordCheck> {
    // An LDAP bind with a DN and an empty password is an anonymous ("unauthenticated") bind that many
    // servers accept: it must never be sent.
    if (!username || !password) return { validPassword: false };
    const entry = await this.searches.use((s) => this.findUser(s, username));
    if (!entry) return { validPassword: false };

    const { verdict, expiresAt } = await this.bindAs(entry.dn, password);
    if (verdict === 'wrong') return { validPassword: false, identity: this.identity(entry, [], username) };
    const groups = await this.searches.use((s) => resolveGroups(s, this.config, entry));
    const identity = this.identity(entry, groups, username);
    if (verdict !== 'ok') {
      identity.disabled = true;
      identity.refusal = verdict;
    }
    const passwordExpiresAt = expiresAt ?? passwordExpiry(entry);
    const warnFrom = Date.now() + this.config.passwordExpiryWarningDays * 86_400_000;
    // Told only within the warning days: the sign-in shows a notice whenever it is set (docs/identity-backends.md).
    return {
      validPassword: true,
      identity,
      ...(passwordExpiresAt !== undefined && passwordExpiresAt <= warnFrom ? { passwordExpiresAt } : {}),
    };
  }

  /**
   * Re-reads a known user for the refresh grant: null when they are gone, replaced, or no longer match
   * `userSearch.filter` (the same search as a sign-in's, so whatever the filter excludes is refused
   * here too). The account's state in the directory comes with the entry (see `accountState`).
   */
  async refresh(known: { username: string; externalId: string }): Promise<Identity | null> {
    return this.searches.use(async (s) => {
      const entry = await this.findUser(s, known.username);
      if (!entry || externalId(entry, this.config.userSearch.idAttr) !== known.externalId) return null;
      return this.identity(entry, await resolveGroups(s, this.config, entry), known.username);
    });
  }

  /**
   * The user a sign-in name names, without a bind (docs/identity-backends.md: a reset by mail for a user who has never
   * signed in here): the same search as a sign-in's, so `userSearch.filter` excludes the same entries.
   */
  async lookup(username: string): Promise<Identity | null> {
    if (!username) return null;
    return this.searches.use(async (s) => {
      const entry = await this.findUser(s, username);
      return entry ? this.identity(entry, await resolveGroups(s, this.config, entry), username) : null;
    });
  }

  /**
   * The user a Kerberos principal names (docs/identity-backends.md "Desktop single sign-on"), without a bind: the
   * KDC vouched for them. Only among the entries `userSearch.filter` lets sign in, as a password sign-in
   * finds them; the account's state comes with the entry, and an AD account locked out since the ticket
   * was issued is refused as disabled (a password bind would be refused with 775 then).
   */
  private async principal(principal: string): Promise<Identity | null> {
    const filter = principalFilter(this.config, principal);
    if (!filter) return null;
    return this.searches.use(async (s) => {
      const entry = await this.findOne(s, filter, principal, LOCKOUT_ATTRIBUTES);
      if (!entry) return null;
      const identity = toIdentity(this.config, entry, await resolveGroups(s, this.config, entry));
      if (!identity.disabled && isLockedOut(entry)) Object.assign(identity, { disabled: true, refusal: 'disabled' });
      return identity;
    });
  }

  async health(): Promise<boolean> {
    await this.searches.use((s) => s.search(this.config.userSearch.baseDN, { scope: 'base', attributes: ['1.1'] }));
    return true;
  }

  async close(): Promise<void> {
    await Promise.all([this.searches.close(), this.binds.close()]);
  }

  private findUser(s: LdapSession, username: string): Promise<Entry | undefined> {
    return this.findOne(s, fillFilter(this.config.userSearch.filter, { username }), username);
  }

  /** The one entry `filter` finds under `userSearch` (none when it finds several); `who` names the search in the log. */
  private async findOne(s: LdapSession, filter: string, who: string, extra: readonly string[] = []): Promise<Entry | undefined> {
    const us = this.config.userSearch;
    // AD's password expiry: constructed per entry, so read only here, where a sign-in tells it.
    const attributes = [...userAttributes(this.config), 'msDS-UserPasswordExpiryTimeComputed', ...extra];
    let result: SearchResult;
    try {
      result = await s.search(us.baseDN, {
        scope: us.scope,
        filter,
        attributes,
        explicitBufferAttributes: binaryAttributes(this.config),
        // Two are enough to tell "exactly one" from "ambiguous".
        sizeLimit: 2,
      });
    } catch (err) {
      // A base DN the service account cannot see would make every user "unknown": that is a fault.
      if ((err as { code?: number }).code === 32) {
        throw new BackendUnavailableError(`userSearch.baseDN "${us.baseDN}" does not exist or is not visible to the service account`);
      }
      throw err;
    }
    // Continuation references (result.searchReferences) are not followed: see docs/identity-backends.md.
    const entries = result.searchEntries;
    if (entries.length > 1) {
      this.logger.warn({ username: who }, 'LDAP user search matched more than one entry; refusing the sign-in');
      return undefined;
    }
    const entry = entries[0];
    if (!entry) return undefined;
    if (!externalId(entry, us.idAttr)) {
      this.logger.error({ dn: entry.dn, idAttr: us.idAttr }, 'LDAP user entry lacks its id attribute; refusing the sign-in');
      return undefined;
    }
    return completeRanges(entry, async (attr) => (await s.search(entry.dn, { scope: 'base', attributes: [attr] })).searchEntries[0]);
  }

  /**
   * The user's bind, with ppolicy's control (OpenLDAP, 389 DS; others ignore it): its answer tells an
   * expired password (only when it was right), one that must change after a reset, the grace logins
   * of an expired one, and the time before expiry.
   */
  private async bindAs(dn: string, password: string): Promise<{ verdict: 'ok' | 'wrong' | AccountRefusal; expiresAt?: number }> {
    const policy = new PasswordPolicyControl();
    try {
      await this.binds.use((s) => s.bind(dn, password, [policy]));
      if (policy.error === 'changeAfterReset') return { verdict: 'password_must_change' };
      if (policy.graceRemaining !== undefined) return { verdict: 'password_expired' };
      return { verdict: 'ok', expiresAt: policy.expiresIn === undefined ? undefined : Date.now() + policy.expiresIn * 1000 };
    } catch (err) {
      if (err instanceof InvalidCredentialsError) {
        if (policy.error === 'passwordExpired') return { verdict: 'password_expired' };
        // The user hears "wrong password" (see adBindRefusal); whoever answers their call may know more.
        if (isAdLockout(err.message)) this.logger.info({ dn }, 'AD answered 775 (account locked out); refused as a wrong password');
        return { verdict: adBindRefusal(err.message) };
      }
      if (err instanceof BackendUnavailableError) throw err;
      if (isInactivatedAccount(err)) return { verdict: 'disabled' };
      // Any other answer from the server (unwilling to perform, inappropriate auth, …) is not a yes.
      this.logger.warn({ dn, err: (err as Error).message }, 'LDAP bind refused');
      return { verdict: 'wrong' };
    }
  }

  private identity(entry: Entry, groups: Group[], typed: string): Identity {
    return toIdentity(this.config, entry, groups, typed);
  }
}
