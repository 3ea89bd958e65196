import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import type { Checkpoints } from '../db/checkpointer.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { PurgeQueries } from './purge-queries.ts';
import { PURGED_TABLES, type PurgedTable } from './model.ts';

export type PurgeCounts = Record<PurgedTable, number>;

const LEASE = 'retention.purge';
const DAY_MS = 24 * 3600 * 1000;

/**
 * How long one batch may take. SQLite runs in this process: a batch holds the event loop, so it must
 * stay short next to a request. PostgreSQL works on its own side and a batch only waits.
 */
const BATCH_TARGET_MS = { sqlite: 2, postgres: 20 };
const MIN_BATCH = 50;
/** The purge works at most a fifth of the time (it rests four times as long as a batch took): requests keep most of the machine. */
const REST_FACTOR = 4;

/**
 * SQLite with the checkpoint thread (src/db/checkpointer.ts): a batch waits while more than this many
 * checkpoints' worth of WAL waits to be copied, looking every WAL_POLL_MS, for at most WAL_WAIT_MS (a
 * thread that cannot copy, on a full disk, must not stop the purge for good). The deletes' pages reach
 * the database file at the pace the thread copies them. Without the wait the purge wrote the WAL faster
 * than the thread copied it, toward the server's fallback mark, whose checkpoint runs on the event
 * loop: /me's worst 10-second p99 under the purge was 7.4× its quiet p99, and 2.4× with the wait
 * (`npm run bench:purge`, 2026-11-29; bench/README.md).
 */
const WAL_BACKLOG_CHECKPOINTS = 2;
const WAL_POLL_MS = 50;
const WAL_WAIT_MS = 5_000;

/**
 * The retention purge (docs/operating-latchkey.md). It deletes in batches sized to take about `BATCH_TARGET_MS` (never
 * more than `retention.batchSize` rows) and rests between them, so no request waits behind more than one short batch and the hot paths
 * keep most of their throughput while a backlog is cleared.
 */
export function retention(
  queries: PurgeQueries,
  config: Config,
  metrics: Pick<Metrics, 'purged'>,
  logger: Logger,
  wal?: Pick<Checkpoints, 'backlog' | 'pages'>,
) {
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const throttleWindowMs = Math.max(config.throttle.userWindow, config.throttle.addressWindow) * 1000;
  const targetMs = config.databaseUrl.startsWith('sqlite:') ? BATCH_TARGET_MS.sqlite : BATCH_TARGET_MS.postgres;
  const maxBatch = config.retention.batchSize;
  let stopping = false;
  let running: Promise<PurgeCounts> | undefined;

  async function walCopied(): Promise<void> {
    if (!wal) return;
    const until = performance.now() + WAL_WAIT_MS;
    while (!stopping && wal.backlog() > WAL_BACKLOG_CHECKPOINTS * wal.pages && performance.now() < until)
      await new Promise((resolve) => setTimeout(resolve, WAL_POLL_MS));
  }

  async function pass(): Promise<PurgeCounts> {
    const counts = Object.fromEntries(PURGED_TABLES.map((t) => [t, 0])) as PurgeCounts;
    const now = clock.now();
    const cutoffs = {
      now,
      throttleWindowStart: now - throttleWindowMs,
      codeWindowStart: now - config.throttle.codeWindow * 1000,
      auditBefore: config.retention.auditDays > 0 ? now - config.retention.auditDays * DAY_MS : undefined,
    };
    let size = Math.min(50, maxBatch);
    for (const table of PURGED_TABLES) {
      if (table === 'audit_events' && cutoffs.auditBefore === undefined) continue;
      for (;;) {
        if (stopping) return counts;
        const started = performance.now();
        const deleted = await queries.deleteBatch(table, cutoffs, size);
        const took = performance.now() - started;
        counts[table] += deleted;
        metrics.purged(table, deleted);
        if (deleted < size) break;
        // Toward the size that takes the target time; one slow batch (a WAL checkpoint) halves it at most.
        // Never below MIN_BATCH: under load a statement's round trip alone can exceed the target, and
        // batches of one row would then never clear a backlog (seen on PostgreSQL with a 10 ms target).
        size = Math.max(
          Math.min(MIN_BATCH, maxBatch),
          Math.min(maxBatch, Math.round(size * Math.min(2, Math.max(0.5, targetMs / Math.max(took, 0.01))))),
        );
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, took * REST_FACTOR)));
        await walCopied();
      }
    }
    if (!stopping) await queries.foldRowCounts();
    return counts;
  }

  /** One pass, and only one at a time in this process. */
  const purgeNow = (): Promise<PurgeCounts> => (running ??= pass().finally(() => (running = undefined)));

  return {
    purgeNow,

    /**
     * Every `retention.interval` seconds, a pass by whichever process of the deployment takes the
     * lease first; the others skip that round. Returns the function that stops it (and waits for a
     * pass under way to stop between two batches).
     */
    schedule(): () => Promise<void> {
      const intervalMs = config.retention.interval * 1000;
      const tick = async () => {
        try {
          const now = clock.now();
          // Held for a little under one interval, so the holder can take it again at its next tick.
          if (!(await queries.takeLease(LEASE, holder, now, now + Math.max(intervalMs - 1000, intervalMs / 2)))) return;
          const counts = await purgeNow();
          const total = Object.values(counts).reduce((a, b) => a + b, 0);
          if (total > 0) logger.info({ purged: counts }, 'expired rows purged');
        } catch (err) {
          logger.warn({ err: (err as Error).message }, 'retention purge failed; it runs again at the next interval');
        }
      };
      const timer = setInterval(() => void tick(), intervalMs).unref();
      return async () => {
        clearInterval(timer);
        stopping = true;
        await running?.catch(() => undefined);
      };
    },
  };
}

export type Retention = ReturnType<typeof retention>;
