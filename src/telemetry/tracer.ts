import type { Attributes, Span } from '@opentelemetry/api';
import type { Logger } from 'pino';

/** `client`: a call to another system (the database, the directory, an HTTP server); `internal`: work in this process. */
export type SpanKindName = 'internal' | 'client';

/** What sdk.ts supplies once the SDK is loaded (its own module: trace.ts loads sdk.ts, and both need it). */
export interface Tracer {
  /**
   * Runs `fn` in a new span, a child of the active one, ended when `fn` returns or its promise
   * settles (an error marks it failed, by the error's type only: messages may quote input). Without
   * an active span that is recorded (sampled), `fn` runs untraced unless `standalone` (a call out a
   * background worker makes).
   */
  span<T>(name: string, kind: SpanKindName, attributes: Attributes | undefined, fn: (span: Span | undefined) => T, standalone: boolean): T;
  /** A child span of the active one, started and ended by the caller (knex's query events); undefined without a recorded one. */
  start(name: string, kind: SpanKindName, attributes: Attributes): Span | undefined;
  /** A failed span: status error and `error.type`, never the message. */
  fail(span: Span, err: unknown): void;
  /**
   * The server span of an HTTP request, continuing the caller's `traceparent`, with `run` (the rest
   * of the request's handlers) called inside it, given the span.
   */
  serve(headers: Record<string, string | string[] | undefined>, name: string, run: (span: Span) => void): void;
  /** The server span of the request being handled, wherever in it the caller is. */
  requestSpan(): Span | undefined;
  /** `traceparent` (and `tracestate`) of the active span, added to outgoing headers. */
  inject(headers: Record<string, string>): void;
  /** The active span's ids, for log lines. */
  ids(): { trace_id: string; span_id: string } | undefined;
  /** Routes the SDK's own complaints (an unreachable collector) to the log. */
  useLogger(logger: Logger): void;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}
