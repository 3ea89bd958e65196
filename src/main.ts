import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { runPrimary } from './cluster/primary.ts';
import { shareMetrics } from './cluster/worker-metrics.ts';
import { ConfigError, loadConfig } from './config/load.ts';
import type { Config } from './config/schema.ts';
import { PluginLoadError } from './identity/loader.ts';
import { createLogger, ListenError, openDeployment, startServer } from './server.ts';
import { startTracing, stopTracing } from './telemetry/trace.ts';

const workerCount = (workers: Config['workers']): number => (workers === 'auto' ? availableParallelism() : workers);

/** A failure the operator can act on from its message alone; anything else is logged with its stack. */
const explained = (err: unknown): err is Error => err instanceof PluginLoadError || err instanceof ListenError;

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`latchkey: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // docs/tracing.md: with the OTEL_* variables set, the SDK loads before the logger (whose lines then
  // carry trace_id) and the app (whose requests get their spans); unset, nothing of it loads.
  const tracing = await startTracing();
  const root = createLogger(config);
  const logger = cluster.isWorker ? root.child({ worker: cluster.worker!.id }) : root;
  tracing.report(logger);
  if (cluster.isPrimary && process.env.REDIS_URL) {
    logger.warn('REDIS_URL is set but not used: Latchkey keeps its shared state (brute-force counters included) in the database');
  }
  const fail = (err: unknown) => {
    if (explained(err)) {
      logger.fatal(err.message);
      process.stderr.write(`latchkey: ${err.message}\n`);
    } else logger.fatal({ err }, 'latchkey failed to start');
    process.exit(1);
  };

  const workers = workerCount(config.workers);
  if (workers > 1 && cluster.isPrimary) {
    // Migrations, the first admin and the first keys once, before any worker starts.
    try {
      const { ctx, database } = await openDeployment(config, logger);
      await ctx.identity.close();
      await database.knex.destroy();
    } catch (err) {
      fail(err);
    }
    runPrimary(workers, logger);
    return;
  }

  try {
    const running = await startServer(config, logger);
    const stop = (reason: string) => {
      logger.info({ reason }, 'shutting down');
      running
        .close()
        // The spans of the last requests are sent before the process ends.
        .then(stopTracing)
        .then(
          () => process.exit(0),
          (err) => {
            logger.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
    };
    // `on`, not `once`: a second signal (Ctrl-C reaches a worker and then its primary's SIGTERM) must
    // not fall back to the default of dying on the spot; close() runs once however often it is asked.
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    // A worker whose primary is gone has nobody to replace or stop it: it stops too.
    if (cluster.isWorker) {
      shareMetrics(running.ctx.metrics.registry);
      process.on('disconnect', () => stop('the primary is gone'));
    }
  } catch (err) {
    fail(err);
  }
}

void main();
