import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { isMetricsRequest, type MetricsResponse } from './messages.ts';

/** A worker that has not stopped this long after SIGTERM is killed (its requests had 5 s to finish). */
const STOP_GRACE_MS = 15_000;
/** A worker that dies sooner than this after it started is replaced only after a pause, so a crash loop does not spin. */
const SHORT_LIFE_MS = 10_000;

/**
 * The primary of cluster mode (docs/operating-latchkey.md): starts `count` workers on one port, replaces one that dies,
 * aggregates their metrics for whichever of them serves `/metrics`, and on SIGTERM or SIGINT stops
 * them all gracefully and exits 0. It serves no requests itself. A worker that fails before it ever
 * listened (the port is taken, the configuration is wrong) would fail again: the primary stops then,
 * with exit code 1, instead of restarting it forever.
 */
export function runPrimary(count: number, logger: Logger): void {
  const aggregator = new AggregatorRegistry();
  const started = new Map<number, number>();
  const listened = new Set<number>();
  let stopping = false;

  const fork = (): Worker => {
    const worker = cluster.fork();
    started.set(worker.id, Date.now());
    return worker;
  };

  cluster.on('listening', (worker) => {
    listened.add(worker.id);
    if (listened.size === count) logger.info({ workers: count }, 'every worker is listening');
  });

  // A worker serving /metrics asks here: only the primary reaches every worker.
  cluster.on('message', (worker, message: unknown) => {
    if (!isMetricsRequest(message)) return;
    const reply = (r: Omit<MetricsResponse, 'type' | 'id'>) => {
      if (worker.isConnected()) worker.send({ type: 'latchkey:metrics-response', id: message.id, ...r } satisfies MetricsResponse);
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: Error) => reply({ error: err.message }),
    );
  });

  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (started.get(worker.id) ?? Date.now());
    started.delete(worker.id);
    const everListened = listened.delete(worker.id);
    if (stopping) return;
    if (!everListened) {
      logger.fatal({ worker: worker.id, code, signal }, 'a worker failed to start; stopping (see its log lines above)');
      void stop(1);
      return;
    }
    logger.error({ worker: worker.id, pid: worker.process.pid, code, signal }, 'a worker died; starting a new one');
    setTimeout(() => void (stopping || fork()), lived < SHORT_LIFE_MS ? 1000 : 0);
  });

  async function stop(exitCode: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            const kill = setTimeout(() => w.process.kill('SIGKILL'), STOP_GRACE_MS);
            w.once('exit', (code) => {
              clearTimeout(kill);
              if (code !== 0 && exitCode === 0) logger.warn({ worker: w.id, code }, 'a worker did not stop cleanly');
              resolve();
            });
            w.process.kill('SIGTERM');
          }),
      ),
    );
    logger.info({ exitCode }, 'every worker stopped');
    process.exit(exitCode);
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      logger.info({ signal, workers: Object.keys(cluster.workers ?? {}).length }, 'shutting down');
      void stop(0);
    });
  }
  for (let i = 0; i < count; i++) fork();
}
