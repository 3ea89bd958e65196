import { InvalidCredentialsError, type Entry } from 'ldapts';
import type { Logger } from 'pino';
import { BackendUnavailableError, type AccountRefusal, type Identity, type IdentityBackend, type PasswordCheck } from '../../src/identity/contract.ts';
import { ACCOUNT_STATE_ATTRIBUTES, accountState, isInactivatedAccount } from './account-state.ts';
import { adBindRefusal, externalId, first, isAdLockout, isBinaryId, strings } from './attributes.ts';
import { servicePassword, type LdapConfig } from './config.ts';
import { fillFilter } from './filter.ts';
import { resolveGroups, rolesFor } from './groups.ts';
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
  }

  async checkPassword(username: string, password: string): Promise<PasswordCheck> {
    // An LDAP bind with a DN and an empty password is an anonymous ("unauthenticated") bind that many
    // servers accept: it must never be sent.
    if (!username || !password) return { validPassword: false };
    const entry = await this.searches.use((s) => this.findUser(s, username));
    if (!entry) return { validPassword: false };

    const verdict = await this.bindAs(entry.dn, password);
    if (verdict === 'wrong') return { validPassword: false, identity: this.identity(entry, [], username) };
    const groups = await this.searches.use((s) => resolveGroups(s, this.config, entry));
    const identity = this.identity(entry, groups, username);
    if (verdict !== 'ok') {
      identity.disabled = true;
      identity.refusal = verdict;
    }
    return { validPassword: true, identity };
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

  async health(): Promise<boolean> {
    await this.searches.use((s) => s.search(this.config.userSearch.baseDN, { scope: 'base', attributes: ['1.1'] }));
    return true;
  }

  async close(): Promise<void> {
    await Promise.all([this.searches.close(), this.binds.close()]);
  }

  private async findUser(s: LdapSession, username: string): Promise<Entry | undefined> {
    const us = this.config.userSearch;
    const attributes = [us.usernameAttr, us.idAttr, us.emailAttr, us.nameAttr, ...ACCOUNT_STATE_ATTRIBUTES];
    if (!this.config.groupSearch) attributes.push('memberOf');
    let result;
    try {
      result = await s.search(us.baseDN, {
        scope: us.scope,
        filter: fillFilter(us.filter, { username }),
        attributes,
        explicitBufferAttributes: isBinaryId(us.idAttr) ? [us.idAttr] : [],
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
    // Continuation references (result.searchReferences) are not followed: see the README.
    const entries = result.searchEntries;
    if (entries.length > 1) {
      this.logger.warn({ username }, 'LDAP user search matched more than one entry; refusing the sign-in');
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

  private async bindAs(dn: string, password: string): Promise<'ok' | 'wrong' | AccountRefusal> {
    try {
      await this.binds.use((s) => s.bind(dn, password));
      return 'ok';
    } catch (err) {
      if (err instanceof InvalidCredentialsError) {
        // The user hears "wrong password" (see adBindRefusal); whoever answers their call may know more.
        if (isAdLockout(err.message)) this.logger.info({ dn }, 'AD answered 775 (account locked out); refused as a wrong password');
        return adBindRefusal(err.message);
      }
      if (err instanceof BackendUnavailableError) throw err;
      if (isInactivatedAccount(err)) return 'disabled';
      // Any other answer from the server (unwilling to perform, inappropriate auth, …) is not a yes.
      this.logger.warn({ dn, err: (err as Error).message }, 'LDAP bind refused');
      return 'wrong';
    }
  }

  private identity(entry: Entry, groups: Array<{ dn: string; name: string }>, typed: string): Identity {
    const us = this.config.userSearch;
    // The account's state as the entry tells it (AD, 389 DS, OpenLDAP ppolicy).
    const refusal = accountState(entry, Date.now());
    // The directory's spelling of the name; of several values (uid may have more), the one typed.
    const names = strings(entry, us.usernameAttr);
    return {
      externalId: externalId(entry, us.idAttr)!,
      username: names.find((n) => n.toLowerCase() === typed.toLowerCase()) ?? names[0] ?? typed,
      email: first(entry, us.emailAttr) ?? null,
      displayName: first(entry, us.nameAttr) ?? null,
      groups: groups.map((g) => g.name),
      roles: rolesFor(groups, this.config.adminGroups),
      ...(refusal ? { disabled: true, refusal } : { disabled: false }),
    };
  }
}
