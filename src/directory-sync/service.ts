/**
 * Directory sync (docs/directory-sync.md): a backend that can be read whole (`IdentityBackend.sync`)
 * is brought in line with Latchkey's local records, on its interval and when an operator asks
 * (GraphQL `syncBackend`, `latchkey sync`). One process of a deployment at a time per backend (the
 * lease); a pass reads the whole directory before it changes anything, and refuses a mass leave.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Actor, AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import type { SyncSource } from '../identity/contract.ts';
import type { DirectorySyncState, Metrics } from '../metrics/registry.ts';
import type { Leavers } from '../users/leavers.ts';
import type { ApplyDeps } from './apply.ts';
import { LEASE_MS } from './lease.ts';
import type { LastSync, SyncResult } from './model.ts';
import { runPass, type PassOptions } from './pass.ts';
import type { SyncQueries } from './sync-queries.ts';

/** How long an operator's pass waits for another process's pass to end before saying so. */
const MANUAL_WAIT_MS = 5000;

export interface DirectorySyncDeps {
  /** Every backend of the chain by id; `sync` where the backend can be read whole. */
  backends: Array<{ id: string; sync?: SyncSource }>;
  queries: SyncQueries;
  transaction: ApplyDeps['transaction'];
  users: Pick<Leavers, 'deprovision' | 'reenable'>;
  audit: Pick<AuditLog, 'record' | 'change'>;
  metrics: Pick<Metrics, 'directorySyncPass'>;
  logger: Logger;
  upstreams: readonly string[];
}

export function directorySync(d: DirectorySyncDeps) {
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const running = new Map<string, Promise<SyncResult | undefined>>();
  let stopping = false;
  const passDeps = { ...d, holder, stopping: () => stopping };

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

  /**
   * A pass if the lease can be had (within `waitMs`) and, with `dueBefore`, the last one started
   * before then; undefined when not. One pass of a backend at a time in this process.
   */
  function attempt(
    id: string,
    source: SyncSource,
    o: PassOptions & { waitMs: number; dueBefore?: number },
  ): Promise<SyncResult | undefined> {
    const started = (async () => {
      const deadline = performance.now() + o.waitMs;
      for (;;) {
        const now = clock.now();
        if (await d.queries.takeLease(id, holder, now, now + LEASE_MS, o.dueBefore)) return runPass(passDeps, id, source, o);
        if (performance.now() >= deadline || stopping) return undefined;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })().finally(() => running.delete(id));
    running.set(id, started);
    return started;
  }

  return {
    /**
     * Runs a pass now and waits for it (GraphQL `syncBackend`, `latchkey sync`). `actor`: an admin API
     * caller, whose pass is an admin change naming them, the permission and the role (docs/admin-api.md
     * "Roles and permissions").
     */
    async run(id: string, o: Omit<PassOptions, 'manual'> & { actor?: Actor } = {}): Promise<SyncResult> {
      const source = sourceOf(id);
      if (running.has(id))
        throw new InputError('id', `a sync of backend "${id}" is under way in this process; try again once it has ended`);
      const { actor, ...options } = o;
      const result = await attempt(id, source, { ...options, manual: true, waitMs: MANUAL_WAIT_MS });
      if (result && actor) {
        const { outcome, users, created, updated, deprovisioned, reenabled } = result;
        await d.audit.change('directory.sync', actor, {}, { backend: id, outcome, users, created, updated, deprovisioned, reenabled });
      }
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
