import type { RequestHandler } from 'express';
import type { Metrics } from './registry.ts';

declare module 'express-serve-static-core' {
  interface Locals {
    /** The `route` label of a request no Express route matched but a mounted app served (`/graphql`). */
    route?: string;
  }
}

/** A request that matched no route: one label value, never the raw path (unbounded, may carry secrets). */
const UNMATCHED = 'unmatched';

/**
 * Counts and times every request under its route pattern (`/oauth/v20/token`, never the URL with its
 * query), once the response is sent.
 */
export const recordRequests =
  (metrics: Metrics): RequestHandler =>
  (req, res, next) => {
    const start = performance.now();
    res.once('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path ?? res.locals.route ?? UNMATCHED;
      metrics.request(route, req.method, res.statusCode, (performance.now() - start) / 1000);
    });
    next();
  };

/** Names the `route` label for a mounted app (`app.use(path, …)`), where Express sets no `req.route`. */
export const routeLabel =
  (route: string): RequestHandler =>
  (_req, res, next) => {
    res.locals.route = route;
    next();
  };
