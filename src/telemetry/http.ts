import type { RequestHandler, Response } from 'express';
import { activeTracer, type Span } from './trace.ts';

/** The request's server span, on its response: read back when the response closes. */
const SPAN = Symbol('latchkey.span');
type Traced = Response & { [SPAN]: Span };

/**
 * The server span of every request (docs/tracing.md "What a trace shows"), the app's first
 * middleware, mounted only when tracing is on: an incoming W3C `traceparent` is continued, and the
 * rest of the request runs inside the span, so the database, LDAP, hashing and outbound spans below
 * it are its children. Named `METHOD route` with the route pattern (as the metrics' `route` label),
 * never the URL: `url.path` is the path alone, without the query that may carry a code or a token.
 * Headers, cookies and bodies are never read into it; the client id is added by the endpoints that
 * know it (`noteOnRequest`).
 */
export function traceRequests(): RequestHandler {
  const tracer = activeTracer();
  // One listener function for every response (no closure per request), as the metrics' own.
  function closed(this: Traced): void {
    const span = this[SPAN];
    const req = this.req;
    const route = (req.route as { path?: string } | undefined)?.path ?? this.locals.route;
    if (route) {
      span.setAttribute('http.route', route);
      span.updateName(`${req.method} ${route}`);
    }
    span.setAttribute('http.response.status_code', this.statusCode);
    // A server span fails on a 5xx only: a 4xx is the client's mistake, answered as it should be.
    if (this.statusCode >= 500) tracer.fail(span, { code: String(this.statusCode) });
    else if (!this.writableFinished) tracer.fail(span, { code: 'aborted' });
    span.end();
  }
  return (req, res, next) => {
    tracer.serve(req.headers, req.method, (span) => {
      // A request the sampler left out still has its span (its ids in the log, traceparent on calls
      // out), but nothing is recorded on it: no attributes to work out, nothing to end.
      if (span.isRecording()) {
        span.setAttributes({
          'http.request.method': req.method,
          'url.path': req.path,
          'url.scheme': req.protocol,
          'client.address': req.ip ?? '',
        });
        (res as Traced)[SPAN] = span;
        res.once('close', closed);
      }
      next();
    });
  };
}
