/**
 * One directory sync pass of one backend, its lease held (docs/directory-sync.md "What a pass does"):
 * read the directory whole, plan, check the leavers' share, apply, record the outcome.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Origin } from '../audit/model.ts';
import type { AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { SyncSource } from '../identity/contract.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { Leavers } from '../users/leavers.ts';
import { type ApplyDeps, applyPlan } from './apply.ts';
import { keepLease } from './lease.ts';
import type { SyncOutcome, SyncResult } from './model.ts';
import { pace, type Pace } from './pace.ts';
import { planPaced, type SyncPlan } from './plan.ts';
import { readDirectory } from './read.ts';
import type { SyncQueries } from './sync-queries.ts';
import type { User } from '../users/model.ts';

/** A read of the directory that has not ended by then fails the pass. */
const READ_TIMEOUT_MS = 10 * 60_000;

/**
 * Local records read by one statement: on SQLite a few milliseconds of the event loop; PostgreSQL
 * reads while the loop is free, and larger pages save it round trips.
 */
const LOCAL_PAGE = { onEventLoop: 500, elsewhere: 2000 };

/** Every local record of backend `id`, page by page, resting between pages as `p` says. */
async function readLocals(queries: SyncQueries, id: string, p: Pace): Promise<User[]> {
  const all: User[] = [];
  const size = queries.onEventLoop ? LOCAL_PAGE.onEventLoop : LOCAL_PAGE.elsewhere;
  for (let after: string | undefined; ; ) {
    const page = await queries.localUsersPage(id, after, size);
    // PostgreSQL: the pass waited, and the loop answered requests meanwhile.
    if (!queries.onEventLoop) p.waited();
    for (const u of page) all.push(u);
    if (page.length < size) return all;
    after = page[page.length - 1]!.externalId;
    if (p.due()) await p.rest();
  }
}

/**
 * A seam for tests, never set by the server: awaited once a pass has read the local records and
 * planned, before it writes, so that test/directory-sync/admin-during-pass.test.ts can make an
 * administrator's change exactly while the pass holds what it read.
 */
export const passSeamForTests: { planned?: (backend: string) => Promise<void> } = {};

export interface PassDeps {
  queries: SyncQueries;
  transaction: ApplyDeps['transaction'];
  users: Pick<Leavers, 'deprovision' | 'reenable'>;
  audit: Pick<AuditLog, 'record'>;
  metrics: Pick<Metrics, 'directorySyncPass'>;
  logger: Logger;
  upstreams: readonly string[];
  /** This process's name on the lease. */
  holder: string;
  /** The server is stopping: the pass stops at its next step. */
  stopping: () => boolean;
}

export interface PassOptions {
  /** Apply a pass that would deprovision more than `maxLeaverShare` (`latchkey sync --allow-mass-leave`). */
  allowMassLeave?: boolean;
  /** Asked for by someone (GraphQL, the CLI), not the schedule; where from, for the audit events. */
  manual?: boolean;
  origin?: Origin;
}

/**
 * Too many leavers: more than `maxLeaverShare` of the enabled records. One leaver alone never is: in
 * a small directory one person leaving is a larger share than any sensible setting.
 */
const massLeave = (plan: SyncPlan, share: number) => plan.leavers.length > 1 && plan.leavers.length > share * plan.enabled;

const percent = (x: number) => `${Math.round(x * 1000) / 10}%`;

export async function runPass(d: PassDeps, id: string, source: SyncSource, o: PassOptions): Promise<SyncResult> {
  const at = clock.now();
  const started = performance.now();
  const lease = keepLease(d.queries, id, d.holder, d.logger);
  const counts = { users: 0, created: 0, updated: 0, deprovisioned: 0, reenabled: 0 };
  let outcome: SyncOutcome = 'applied';
  let error: string | null = null;
  const check = () => {
    if (d.stopping()) throw new Error('the server stopped during the pass');
    if (!lease.held()) throw new Error('this process lost the sync lease during the pass (another may have taken over)');
  };
  // A refusal or failure is audited when it starts (and whenever someone asks for a pass), not again
  // at every scheduled pass while it lasts: an outage of an hour at a 10 s interval is one event. The
  // error is logged every time.
  const previous = (await d.queries.lastSyncs().catch(() => [])).find((s) => s.backend === id)?.outcome;
  const audit = (kind: 'directory.sync_refused' | 'directory.sync_failed', details: Record<string, unknown>) =>
    o.manual || previous !== (kind === 'directory.sync_refused' ? 'refused' : 'failed')
      ? d.audit.record({ kind, ip: o.origin?.ip, requestId: o.origin?.requestId, details: { backend: id, ...details } })
      : undefined;
  try {
    // The read waits for the directory most of its time; a source makes each page in short turns of its own.
    const listing = await readDirectory(source, { timeoutMs: READ_TIMEOUT_MS, stillHeld: () => !d.stopping() && lease.held() }).catch(
      (err: Error) => Promise.reject(new Error(`the directory could not be read whole, so nothing was changed: ${err.message}`)),
    );
    // From here on the pass's work is on the event loop, shared with the server's requests (pace.ts).
    const p = pace();
    const locals = await readLocals(d.queries, id, p);
    const plan = await planPaced(id, listing, locals, { now: clock.now(), newId: randomUUID, pace: p });
    await passSeamForTests.planned?.(id);
    counts.users = plan.listed;
    if (plan.duplicates.length > 0)
      d.logger.warn(
        { backend: id, usernames: plan.duplicates.slice(0, 20) },
        'the directory lists these names for more than one entry; left alone',
      );
    const leavers = plan.leavers.length;
    if (massLeave(plan, source.maxLeaverShare) && !o.allowMassLeave) {
      outcome = 'refused';
      error =
        `${leavers} of the ${plan.enabled} enabled users (${percent(leavers / plan.enabled)}) would be deprovisioned, more than ` +
        `maxLeaverShare (${percent(source.maxLeaverShare)}); nothing was changed. Check the directory and the backend's userSearch, ` +
        `then apply it with: npm run latchkey -- sync ${id} --allow-mass-leave`;
      d.logger.error({ backend: id, leavers, enabled: plan.enabled, listed: plan.listed }, `directory sync refused: ${error}`);
      await audit('directory.sync_refused', { leavers, enabled: plan.enabled, listed: plan.listed, maxLeaverShare: source.maxLeaverShare });
    } else {
      if (massLeave(plan, source.maxLeaverShare))
        d.logger.warn(
          { backend: id, leavers, enabled: plan.enabled },
          'directory sync: a mass leave applied, as asked (--allow-mass-leave)',
        );
      const apply = {
        backend: id,
        transaction: d.transaction,
        users: d.users,
        upstreams: d.upstreams,
        check,
        pace: p,
        onEventLoop: d.queries.onEventLoop,
        now: clock.now(),
        origin: o.origin,
      };
      await applyPlan(plan, apply, counts);
    }
  } catch (err) {
    outcome = 'failed';
    error = (err as Error).message;
    d.logger.error({ backend: id, err: error, ...counts }, 'directory sync failed');
    await audit('directory.sync_failed', { error, ...counts });
  } finally {
    lease.release();
  }
  const durationMs = Math.round(performance.now() - started);
  d.metrics.directorySyncPass(id, durationMs / 1000);
  const result: SyncResult = { backend: id, outcome, at, durationMs, ...counts, error };
  if (outcome === 'applied') {
    const changed = counts.created + counts.updated + counts.deprovisioned + counts.reenabled > 0;
    d.logger[changed ? 'info' : 'debug']({ backend: id, ...counts, durationMs }, 'directory synced');
  }
  try {
    await d.queries.finish(id, d.holder, result);
  } catch (err) {
    d.logger.error({ backend: id, err: (err as Error).message }, 'directory sync: the outcome was not recorded');
  }
  return result;
}
