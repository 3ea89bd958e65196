import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Express, NextFunction, Request, RequestHandler, Response } from 'express';

type Method = 'get' | 'post';

/**
 * Routes registered both with Express's router and in a table keyed by the exact path, consulted
 * first. Express's router tests each layer's pattern in turn and dispatches through the route's own
 * stack; on the hot endpoints (token, me, userinfo, introspection, authorize) that walk was about a
 * tenth of a request's CPU. A request whose path is spelt exactly as registered runs its handlers
 * straight from the table; any other spelling (case, a trailing slash) or method (HEAD, OPTIONS)
 * falls through to the router, which answers as before: the table changes how fast, never what.
 */
export class ExactRoutes {
  private readonly table = new Map<string, Map<string, RequestHandler[]>>();

  /** The middleware to mount before every other route. */
  readonly dispatch: RequestHandler = (req, res, next) => {
    const chain = this.table.get(req.path)?.get(req.method);
    if (!chain) {
      next();
      return;
    }
    // The metrics' `route` label: the pattern, as Express's req.route.path would give it.
    res.locals.route = req.path;
    run(chain, req, res, (err?: unknown) => (err === undefined ? this.unanswered(req, res, next) : next(err)));
  };

  /**
   * @param unanswered what answers a request whose handlers all passed it on (the app's 404): going
   * back to the router would run the same route's handlers a second time.
   */
  constructor(
    private readonly app: Express,
    private readonly unanswered: RequestHandler,
  ) {}

  /**
   * The server's request listener. A request whose path (as sent, without its query) and method are
   * in the table is set up as Express's app.handle and router.handle set it up (the prototypes that
   * give it req.query, res.json and the rest; originalUrl, baseUrl, params, locals) and then runs
   * `first` (the app's own first middleware: metrics, request id) and the route's handlers, without
   * the router's walk through its layers: on userinfo that walk was a sixth of the CPU. An error goes
   * to `fail`, the app's error handler, as the router would send it there. Anything else (another
   * spelling, method or path) goes to the app, whose `dispatch` and router answer it as before.
   */
  front(first: RequestHandler[], fail: ErrorRequestHandler): RequestListener {
    const app = this.app;
    const chains = new Map<RequestHandler[], RequestHandler[]>();
    for (const methods of this.table.values()) for (const chain of methods.values()) chains.set(chain, [...first, ...chain]);
    // What `fail` passes an error on to: it answers or destroys the response itself, so this only makes sure it ends.
    const lastResort = (res: Response) => () => {
      if (!res.writableEnded) res.destroy();
    };
    return (rawReq: IncomingMessage, rawRes: ServerResponse) => {
      const url = rawReq.url ?? '/';
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      const chain = this.table.get(path)?.get(rawReq.method ?? '');
      if (!chain) {
        app(rawReq, rawRes);
        return;
      }
      const req = rawReq as Request;
      const res = rawRes as Response;
      req.res = res;
      res.req = req;
      // A no-op when the server made them with these prototypes (express-messages.ts), as it does.
      Object.setPrototypeOf(req, app.request);
      Object.setPrototypeOf(res, app.response);
      res.locals = Object.create(null) as Response['locals'];
      res.locals.route = path;
      req.originalUrl = url;
      req.baseUrl = '';
      req.params = {};
      // As Express's Layer.handleError: a throw from the error handler itself ends the response
      // rather than escaping as an uncaught exception.
      const failed = (e: unknown) => {
        try {
          fail(e, req, res, lastResort(res));
        } catch {
          res.destroy();
        }
      };
      run(chains.get(chain)!, req, res, (err?: unknown) => {
        // `next('route')` and `next('router')` leave the route without an error, as in the router.
        if (err === undefined || err === 'route' || err === 'router') this.unanswered(req, res, failed);
        else failed(err);
      });
    };
  }

  /** Like `app.route(path)`: the methods it is given go to both the router and the table. */
  route(path: string): {
    get(...handlers: RequestHandler[]): ReturnType<ExactRoutes['route']>;
    post(...handlers: RequestHandler[]): ReturnType<ExactRoutes['route']>;
  } {
    const add = (method: Method, handlers: RequestHandler[]) => {
      this.app[method](path, ...handlers);
      const methods = this.table.get(path) ?? new Map<string, RequestHandler[]>();
      methods.set(method.toUpperCase(), handlers);
      this.table.set(path, methods);
    };
    const self = {
      get: (...handlers: RequestHandler[]) => {
        add('get', handlers);
        return self;
      },
      post: (...handlers: RequestHandler[]) => {
        add('post', handlers);
        return self;
      },
    };
    return self;
  }
}

/**
 * Runs handlers in order as Express runs a route's stack: `next()` moves on, `next(err)` leaves for
 * the app's error handler, and a throw or a rejected promise counts as `next(err)` (Express 5).
 */
function run(chain: RequestHandler[], req: Request, res: Response, done: NextFunction): void {
  let i = 0;
  const step: NextFunction = (err?: unknown) => {
    if (err !== undefined && err !== null) {
      done(err);
      return;
    }
    const handler = chain[i++];
    if (!handler) {
      done();
      return;
    }
    try {
      const returned = handler(req, res, step) as unknown;
      if (returned instanceof Promise) returned.then(undefined, (e: unknown) => step(e ?? new Error('rejected promise')));
    } catch (e) {
      step(e);
    }
  };
  step();
}
