import cluster from 'node:cluster';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { clusterMetrics } from '../cluster/worker-metrics.ts';
import type { AppContext } from '../context.ts';
import { bearerError } from '../errors/oauth.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * `GET /metrics`, Prometheus text (docs/operating-latchkey.md). With `metrics.token` set, only with that bearer token;
 * compared in constant time. In cluster mode the totals of every worker.
 */
export function metricsHandler(ctx: AppContext): RequestHandler {
  const token = ctx.config.metrics.token;
  const expected = token ? digest(token) : undefined;
  return async (req, res, next) => {
    try {
      if (expected) {
        const [scheme, given] = (req.headers.authorization ?? '').split(' ');
        if (scheme?.toLowerCase() !== 'bearer' || !given) throw bearerError('invalid_token', 'the metrics need a bearer token');
        if (!timingSafeEqual(digest(given), expected)) throw bearerError('invalid_token', 'the bearer token is not the metrics token');
      }
      const text = cluster.isWorker ? await clusterMetrics() : await ctx.metrics.registry.metrics();
      res.setHeader('Cache-Control', 'no-store');
      res.type(ctx.metrics.registry.contentType).send(text);
    } catch (err) {
      next(err);
    }
  };
}
