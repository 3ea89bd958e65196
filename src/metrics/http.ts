import type { RequestHandler, Response } from 'express';
import type { Metrics } from './registry.ts';

declare module 'express-serve-static-core' {
  interface Locals {
    /** The `route` label of a request no Express route matched but a mounted app served (`/graphql`). */
    route?: string;
  }
}

/** A request that matched no route: one label value, never the raw path (unbounded, may carry secrets). */
const UNMATCHED = 'unmatched';

/** When the request arrived, on the response: read back once it is sent. */
const STARTED = Symbol('latchkey.started');
type Timed = Response & { [STARTED]: number };

/**
 * Counts and times every request under its route pattern (`/oauth/v20/token`, never the URL with its
 * query), once the response is sent. One listener function for every response (no closure per
 * request): this runs on every request of the hot paths.
 */
export function recordRequests(metrics: Metrics): RequestHandler {
  function finished(this: Timed): void {
    const req = this.req;
    const route = (req.route as { path?: string } | undefined)?.path ?? this.locals.route ?? UNMATCHED;
    metrics.request(route, req.method, this.statusCode, (performance.now() - this[STARTED]) / 1000);
  }
  return (_req, res, next) => {
    (res as Timed)[STARTED] = performance.now();
    res.on('finish', finished);
    next();
  };
}

/** Names the `route` label for a mounted app (`app.use(path, …)`), where Express sets no `req.route`. */
export const routeLabel =
  (route: string): RequestHandler =>
  (_req, res, next) => {
    res.locals.route = route;
    next();
  };
