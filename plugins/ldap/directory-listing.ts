import { performance } from 'node:perf_hooks';
import { ResultCodeError, type Entry, type SearchOptions } from 'ldapts';
import type { Logger } from 'pino';
import { BackendUnavailableError, type Identity } from '../../src/identity/plugin-kit.ts';
import { externalId, strings } from './attributes.ts';
import { directoryTypeOf, type LdapConfig } from './config.ts';
import { everyUserFilter } from './filter.ts';
import { GroupIndex } from './group-index.ts';
import { groupOf, memberOfGroups, type Group } from './groups.ts';
import { binaryAttributes, toIdentity, userAttributes } from './identity.ts';
import type { ConnectionPool, LdapSession } from './pool.ts';
import { completeRanges, firstRange } from './ranges.ts';

/**
 * The continuation references Active Directory sends from a domain's root for its other naming
 * contexts, which hold no users: the DNS zones and the configuration. Any other reference (a child
 * domain, an OpenLDAP referral object) names entries Latchkey would not read, and fails the listing.
 * (The domain-scope control would silence AD's, but OpenLDAP honours it too and would drop a subtree
 * without a word.)
 */
const NO_USERS_THERE = /^ldaps?:\/\/[^/]*\/(DC=DomainDnsZones|DC=ForestDnsZones|CN=Configuration),/i;

/** At most this many DNs of skipped entries in the pass's one log line about them. */
const SAMPLE = 5;

/**
 * A page is hundreds of entries, each made into a user (or a group into the index) on the event
 * loop, which the server's requests share (docs/directory-sync.md "Reading the directory"): after
 * every `SLICE_MS` of that work the listing rests while requests keep the loop busy, and not at all
 * on a quiet server. No request waits behind a whole page.
 */
const SLICE_MS = 5;
/**
 * A rest's length, as a multiple of the slice before it. Making users is not all a page costs the
 * loop: ldapts parses the page as it arrives (during the rests, as the next page is asked for early)
 * and the garbage collector clears up after both, together about twice as long again. Rests of five
 * times the slice leave requests over half the loop while the directory is read.
 */
const REST_FACTOR = 5;

/** The listing's slices: `mark()` starts one (after a wait for the directory); `rest()` rests once one has had its time. */
function slices() {
  let since = performance.now();
  const rest = async (worked: number) => {
    const until = performance.now() + worked * REST_FACTOR;
    for (;;) {
      const before = performance.eventLoopUtilization();
      await new Promise((resolve) => setTimeout(resolve, 1));
      // The loop's idle time is the time it waited for I/O: a rest that mostly waited finds nobody in need of it.
      if (performance.eventLoopUtilization(before).utilization < 0.5 || performance.now() >= until) break;
    }
    since = performance.now();
  };
  return {
    mark: () => {
      since = performance.now();
    },
    rest: (): Promise<void> | undefined => {
      const worked = performance.now() - since;
      return worked < SLICE_MS ? undefined : rest(Math.min(worked, 100));
    },
  };
}

/**
 * Every user of an LDAP backend, for directory sync (docs/directory-sync.md, "Reading the directory"):
 * a paged search of `userSearch` with `{username}` as a presence match, a page per batch, each user
 * made by `toIdentity` exactly as a sign-in makes them. With `groupSearch`, every group is read once
 * first (`GroupIndex`); without, the entries' `memberOf`. Anything short of the whole directory (an
 * outage, a size or time limit, a missing base, a referral, a refused page) throws
 * `BackendUnavailableError`: a short list would deprovision everyone it missed.
 *
 * The pass runs on a connection of its own (`ConnectionPool.dedicated`), not a pooled one: RFC
 * 2696's cookie belongs to the connection (OpenLDAP keeps one paged search per connection, and a
 * sign-in's own paged group search on it would end the listing's), so it could not go back to the pool
 * between pages; and holding a pooled one for the whole pass would take a sign-in's connection for a
 * minute (every one of them with `poolSize: 1`). Each page is its own request, bounded by `timeoutMs`.
 */
export async function* listDirectory(config: LdapConfig, pool: ConnectionPool, logger: Logger): AsyncGenerator<Identity[]> {
  const connection = await pool.dedicated().catch((err: Error) => {
    throw new BackendUnavailableError(`directory sync could not reach the directory: ${err.message}`, { cause: err });
  });
  const session = connection.session;
  const us = config.userSearch;
  const skipped: string[] = [];
  let phase: Phase = 'groupSearch';
  try {
    const slice = slices();
    let groupsOf: (entry: Entry) => Group[] = memberOfGroups;
    if (config.groupSearch) {
      const index = await readGroups(session, config, logger, slice);
      groupsOf = (entry) => index.groupsOf(entry.dn);
    }
    phase = 'userSearch';
    const attributes = userAttributes(config);
    const options = { scope: us.scope, filter: everyUserFilter(us.filter), attributes, explicitBufferAttributes: binaryAttributes(config) };
    const pages = pagesOf(session, us.baseDN, options, config.sync.pageSize);
    // The next page is asked for before this one is handed over: the directory works on it while
    // the sync writes this one.
    let next = pages.next();
    for (;;) {
      const page = await next;
      slice.mark();
      if (page.done) break;
      next = pages.next();
      next.catch(() => undefined); // a consumer that stops early never awaits it
      const batch: Identity[] = [];
      for (const entry of page.value) {
        if (!externalId(entry, us.idAttr) || strings(entry, us.usernameAttr).length === 0) {
          skipped.push(entry.dn);
          continue;
        }
        if (hasRanges(entry)) await completeRanges(entry, readAgain(session, entry.dn), { whole: true });
        batch.push(toIdentity(config, entry, groupsOf(entry), undefined, { forSync: true }));
        const rest = slice.rest();
        if (rest) await rest;
      }
      if (batch.length > 0) yield batch;
    }
  } catch (err) {
    throw listingFailed(err, config, phase);
  } finally {
    await connection.close();
  }
  // Entries the listing cannot name are not "gone": their records are no leavers. An id hidden from
  // the service account (an ACL change on an OU) would otherwise deprovision everyone under it, so
  // the pass fails and says which entries, as for any read that is not whole.
  if (skipped.length > 0) {
    logger.error(
      { count: skipped.length, examples: skipped.slice(0, SAMPLE), idAttr: us.idAttr, usernameAttr: us.usernameAttr },
      'directory sync found entries of userSearch without the id or username attribute; the pass changes nothing',
    );
    throw new BackendUnavailableError(
      `${skipped.length} entries of userSearch lack ${us.idAttr} or ${us.usernameAttr} (first: ${skipped[0]}): give the service account read access to them, or leave them out with userSearch.filter`,
    );
  }
}

type Phase = 'userSearch' | 'groupSearch';

/**
 * Every group `groupSearch` finds, with its members (ranges completed), into an index. Active
 * Directory is asked for the members by their first range (`firstRange`), so that Samba's DCs send a
 * large group in ranges as Microsoft's do. OpenLDAP and 389 DS are asked by name: they know no `;range=`
 * option, and a server takes an attribute with an option it does not know for an attribute it does not
 * know (nothing would come back). A group that took more reads says so at debug level.
 */
async function readGroups(session: LdapSession, config: LdapConfig, logger: Logger, slice: ReturnType<typeof slices>): Promise<GroupIndex> {
  const gs = config.groupSearch!;
  const index = new GroupIndex(gs.nested);
  const memberAttr = directoryTypeOf(config) === 'activeDirectory' ? firstRange(gs.memberAttr) : gs.memberAttr;
  const options = { scope: gs.scope, filter: gs.filter, attributes: [gs.nameAttr, memberAttr] };
  for await (const entries of pagesOf(session, gs.baseDN, options, config.sync.pageSize)) {
    slice.mark();
    for (const entry of entries) {
      let reads = 0;
      if (hasRanges(entry)) {
        const again = readAgain(session, entry.dn);
        const count = (attr: string) => {
          reads++;
          return again(attr);
        };
        await completeRanges(entry, count, { whole: true });
      }
      const members = strings(entry, gs.memberAttr);
      if (reads > 0)
        logger.debug({ group: entry.dn, members: members.length, reads }, 'directory sync read the rest of a large group range by range');
      index.add(groupOf(entry, gs), members);
      const rest = slice.rest();
      if (rest) await rest;
    }
  }
  return index;
}

/** The pages of a paged search, each its entries; a continuation reference ends it with an error. */
async function* pagesOf(session: LdapSession, baseDN: string, options: SearchOptions, pageSize: number): AsyncGenerator<Entry[]> {
  for await (const page of session.searchPages(baseDN, { ...options, paged: { pageSize } })) {
    // Not followed, as at sign-in (docs/identity-backends.md); but a listing that skipped a subtree
    // would take everyone in it for a leaver.
    const elsewhere = page.searchReferences.find((uri) => !NO_USERS_THERE.test(uri));
    if (elsewhere) throw new ReferralMet(elsewhere);
    yield page.searchEntries;
  }
}

class ReferralMet extends Error {}

/** Active Directory's range retrieval (`member;range=0-1499`): see ranges.ts. Asked of every entry, so without a list of its keys. */
const hasRanges = (entry: Entry): boolean => {
  for (const k in entry) if (k.includes(';range=')) return true;
  return false;
};

const readAgain = (session: LdapSession, dn: string) => async (attr: string) =>
  (await session.search(dn, { scope: 'base', attributes: [attr] })).searchEntries[0];

/** LDAP result codes a listing can end with, and what they mean for the operator. */
const WHY: Record<number, (what: string, config: LdapConfig) => string> = {
  3: () => "the directory's time limit ended the search (timeLimitExceeded): raise the service account's time limit",
  4: (_, c) =>
    `the directory's size limit ended the search after part of the entries (sizeLimitExceeded): let the service account${c.bindDN ? ` (${c.bindDN})` : ''} read every entry (OpenLDAP: limits dn.exact="…" size.prtotal=unlimited; 389 DS: nsSizeLimit: -1 on its entry)`,
  10: () => 'the directory referred the search to another server, and Latchkey does not follow referrals',
  11: () => "the directory's administrative limit ended the search (adminLimitExceeded)",
  12: () => 'the directory refused the paged results control (RFC 2696) the listing needs',
  32: (what, c) =>
    `${what}.baseDN "${what === 'userSearch' ? c.userSearch.baseDN : c.groupSearch?.baseDN}" does not exist or is not visible to the service account`,
};

/** Any failure of a listing, as the one error that tells the sync "the directory could not be read whole". */
function listingFailed(err: unknown, config: LdapConfig, what: Phase): BackendUnavailableError {
  const prefix = `directory sync could not read every entry of ${what}, so nobody is treated as gone`;
  if (err instanceof ReferralMet)
    return new BackendUnavailableError(
      `${prefix}: the directory referred part of ${what}.baseDN to ${err.message}, which Latchkey does not follow: the entries there would be missed`,
    );
  if (err instanceof ResultCodeError) {
    const why = WHY[err.code]?.(what, config) ?? `the directory answered ${err.code} (${err.message})`;
    return new BackendUnavailableError(`${prefix}: ${why}`, { cause: err });
  }
  return new BackendUnavailableError(`${prefix}: ${(err as Error).message}`, { cause: err });
}
