/**
 * Directory sync (docs/directory-sync.md): a backend that can be read whole (`IdentityBackend.sync`)
 * is brought in line with Latchkey's local records, on its interval and when an operator asks
 * (GraphQL `syncBackend`, `latchkey sync`). One process of a deployment at a time per backend (the
 * lease); a pass reads the whole directory before it changes anything, and refuses a mass leave.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Origin } from '../audit/model.ts';
import type { AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import type { SyncSource } from '../identity/contract.ts';
import type { DirectorySyncState, Metrics } from '../metrics/registry.ts';
import type { Leavers } from '../users/leavers.ts';
import { type ApplyDeps, applyPlan } from './apply.ts';
import { keepLease, LEASE_MS } from './lease.ts';
import type { LastSync, SyncOutcome, SyncResult } from './model.ts';
import { planSync, type SyncPlan } from './plan.ts';
import { readDirectory } from './read.ts';
import type { SyncQueries } from './sync-queries.ts';

/** A read of the directory that has not ended by then fails the pass. */
const READ_TIMEOUT_MS = 10 * 60_000;
/** How long an operator's pass waits for another process's pass to end before saying so. */
const MANUAL_WAIT_MS = 5000;

export interface DirectorySyncDeps {
  /** Every backend of the chain by id; `sync` where the backend can be read whole. */
  backends: Array<{ id: string; sync?: SyncSource }>;
  queries: SyncQueries;
  transaction: ApplyDeps['transaction'];
  users: Pick<Leavers, 'deprovision' | 'reenable'>;
  audit: Pick<AuditLog, 'record'>;
  metrics: Pick<Metrics, 'directorySyncPass'>;
  logger: Logger;
  upstreams: readonly string[];
}

/**
 * Too many leavers: more than `maxLeaverShare` of the enabled records. One leaver alone never is: in
 * a small directory one person leaving is a larger share than any sensible setting.
 */
const massLeave = (plan: SyncPlan, share: number) => plan.leavers.length > 1 && plan.leavers.length > share * plan.enabled;

const percent = (x: number) => `${Math.round(x * 1000) / 10}%`;

export function directorySync(d: DirectorySyncDeps) {
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const running = new Map<string, Promise<SyncResult | undefined>>();
  let stopping = false;

  function sourceOf(id: string): SyncSource {
    const backend = d.backends.find((b) => b.id === id);
    if (!backend) throw new NotFoundError('id', `no identity backend "${id}"`);
    if (!backend.sync) {
      throw new InputError(
        'id',
        `backend "${id}" has no directory sync: only a backend that can be read whole (LDAP, with its "sync" settings) is synced`,
      );
    }
    return backend.sync;
  }

  /** One pass, the lease held: read, plan, check, apply, record. */
  async function pass(id: string, source: SyncSource, o: { allowMassLeave?: boolean; origin?: Origin }): Promise<SyncResult> {
    const at = clock.now();
    const started = performance.now();
    const lease = keepLease(d.queries, id, holder, d.logger);
    const counts = { users: 0, created: 0, updated: 0, deprovisioned: 0, reenabled: 0 };
    let outcome: SyncOutcome = 'applied';
    let error: string | null = null;
    const check = () => {
      if (stopping) throw new Error('the server stopped during the pass');
      if (!lease.held()) throw new Error('this process lost the sync lease during the pass (another may have taken over)');
    };
    try {
      const listing = await readDirectory(source, { timeoutMs: READ_TIMEOUT_MS, stillHeld: () => !stopping && lease.held() }).catch(
        (err: Error) => Promise.reject(new Error(`the directory could not be read whole, so nothing was changed: ${err.message}`)),
      );
      const plan = planSync(id, listing, await d.queries.localUsers(id), { now: clock.now(), newId: randomUUID });
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
        await d.audit.record({
          kind: 'directory.sync_refused',
          ip: o.origin?.ip,
          requestId: o.origin?.requestId,
          details: { backend: id, leavers, enabled: plan.enabled, listed: plan.listed, maxLeaverShare: source.maxLeaverShare },
        });
      } else {
        if (massLeave(plan, source.maxLeaverShare))
          d.logger.warn(
            { backend: id, leavers, enabled: plan.enabled },
            'directory sync: a mass leave applied, as asked (--allow-mass-leave)',
          );
        await applyPlan(
          plan,
          { backend: id, transaction: d.transaction, users: d.users, upstreams: d.upstreams, check, now: clock.now(), origin: o.origin },
          counts,
        );
      }
    } catch (err) {
      outcome = 'failed';
      error = (err as Error).message;
      d.logger.error({ backend: id, err: error, ...counts }, 'directory sync failed');
      await d.audit.record({
        kind: 'directory.sync_failed',
        ip: o.origin?.ip,
        requestId: o.origin?.requestId,
        details: { backend: id, error, ...counts },
      });
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
      await d.queries.finish(id, holder, result);
    } catch (err) {
      d.logger.error({ backend: id, err: (err as Error).message }, 'directory sync: the outcome was not recorded');
    }
    return result;
  }

  /**
   * A pass if the lease can be had (within `waitMs`) and, with `dueBefore`, the last one started
   * before then; undefined when not. One pass of a backend at a time in this process.
   */
  function attempt(
    id: string,
    source: SyncSource,
    o: { allowMassLeave?: boolean; origin?: Origin; waitMs: number; dueBefore?: number },
  ): Promise<SyncResult | undefined> {
    const started = (async () => {
      const deadline = performance.now() + o.waitMs;
      for (;;) {
        const now = clock.now();
        if (await d.queries.takeLease(id, holder, now, now + LEASE_MS, o.dueBefore)) return pass(id, source, o);
        if (performance.now() >= deadline || stopping) return undefined;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })().finally(() => running.delete(id));
    running.set(id, started);
    return started;
  }

  return {
    /** Runs a pass now and waits for it (GraphQL `syncBackend`, `latchkey sync`). */
    async run(id: string, o: { allowMassLeave?: boolean; origin?: Origin } = {}): Promise<SyncResult> {
      const source = sourceOf(id);
      if (running.has(id))
        throw new InputError('id', `a sync of backend "${id}" is under way in this process; try again once it has ended`);
      const result = await attempt(id, source, { ...o, waitMs: MANUAL_WAIT_MS });
      if (result) return result;
      const lease = await d.queries.leaseOf(id, clock.now());
      throw new InputError(
        'id',
        `a sync of backend "${id}" is under way in another process${lease ? ` (${lease.holder})` : ''}; try again once it has ended`,
      );
    },

    /** Seconds between a backend's passes (0: only when asked); null for a backend without sync. */
    interval(id: string): number | null {
      return d.backends.find((b) => b.id === id)?.sync?.interval ?? null;
    },

    /** The last pass of a backend with sync; null for one without, or never synced. */
    async lastSync(id: string): Promise<LastSync | null> {
      if (!d.backends.find((b) => b.id === id)?.sync) return null;
      return (await d.queries.lastSyncs()).find((s) => s.backend === id) ?? null;
    },

    /** The metrics' view of every backend with sync (src/metrics/registry.ts). */
    async states(): Promise<DirectorySyncState[]> {
      const last = new Map((await d.queries.lastSyncs()).map((s) => [s.backend, s]));
      return d.backends.flatMap(({ id, sync }) => {
        if (!sync) return [];
        const s = last.get(id);
        const zero = { users: 0, created: 0, updated: 0, deprovisioned: 0, reenabled: 0 };
        return [{ backend: id, ...(s ?? zero), lastSuccessAt: s?.lastSuccessAt ?? null, refused: s?.outcome === 'refused' }];
      });
    },

    /**
     * Every backend whose `sync.interval` is above 0 gets a pass once an interval, by whichever
     * process of the deployment takes the lease when it is due. Returns the function that stops the
     * timers (and a pass under way, at its next batch).
     */
    schedule(): () => Promise<void> {
      const timers = d.backends.flatMap(({ id, sync }) => {
        if (!sync || sync.interval <= 0) return [];
        const intervalMs = sync.interval * 1000;
        // Checked ten times an interval: a pass starts at most a tenth of an interval late.
        const tickMs = Math.max(1000, intervalMs / 10);
        const tick = () => {
          if (stopping || running.has(id)) return;
          attempt(id, sync, { waitMs: 0, dueBefore: clock.now() - intervalMs + tickMs / 2 }).catch((err: Error) =>
            d.logger.error({ backend: id, err: err.message }, 'directory sync could not start; tried again at the next tick'),
          );
        };
        return [setInterval(tick, tickMs).unref()];
      });
      return async () => {
        stopping = true;
        for (const t of timers) clearInterval(t);
        await Promise.allSettled([...running.values()]);
      };
    },
  };
}

export type DirectorySync = ReturnType<typeof directorySync>;
