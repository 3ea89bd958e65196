/**
 * Tracing as the rest of the server sees it (docs/tracing.md): a handful of functions that do nothing
 * until `startTracing` finds the OpenTelemetry variables set, and only then load the SDK (sdk.ts, by a
 * dynamic import). Unset, no OpenTelemetry module is loaded and `span` is a plain call of its function:
 * the hot paths pay one comparison. Modules whose every statement would pay for a wrapper (the
 * database's, LDAP's) ask `tracingOn()` once, when they are built, and wrap themselves only then.
 */
import type { Attributes, Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { SpanKindName, Tracer } from './tracer.ts';

export type { Attributes, Span, SpanKindName };

let tracer: Tracer | undefined;

/** Whether tracing was started: decided once, at start, before the app is built. */
export const tracingOn = (): boolean => tracer !== undefined;

/**
 * Runs `fn`, in a span when tracing is on (a child of the request's span: with no span active it
 * runs untraced). Off, it is `fn()` and nothing more.
 */
export function span<T>(
  name: string,
  attributes: Attributes | undefined,
  fn: (span: Span | undefined) => T,
  kind: SpanKindName = 'internal',
): T {
  if (tracer === undefined) return fn(undefined);
  return tracer.span(name, kind, attributes, fn, false);
}

/**
 * A call out (docs/tracing.md): a client span, the request's child, or a trace of its own when no
 * request made it (a webhook or logout delivery by a background worker). Off, `fn()`.
 */
export function outboundSpan<T>(name: string, attributes: Attributes, fn: (span: Span | undefined) => T): T {
  if (tracer === undefined) return fn(undefined);
  return tracer.span(name, 'client', attributes, fn, true);
}

/** Sets an attribute of the current request's server span (the client id, once known); nothing when off. */
export function noteOnRequest(name: string, value: string | number | boolean): void {
  tracer?.requestSpan()?.setAttribute(name, value);
}

/** The started tracer; only modules built when `tracingOn()` ask for it. */
export function activeTracer(): Tracer {
  if (!tracer) throw new Error('tracing is off');
  return tracer;
}

/** The ids of the active span, for pino's `mixin` (the logger has it only when tracing is on). */
export const traceIds = (): Record<string, string> => tracer?.ids() ?? {};

/** What startTracing decided, for the log once the logger exists. */
export interface TracingStatus {
  on: boolean;
  /** Logs the decision and, when on, routes the SDK's own warnings to `logger`. */
  report(logger: Logger): void;
}

const truthy = (v: string | undefined) => v?.trim().toLowerCase() === 'true';
const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/** Where spans go, without any credentials or query the URL may carry (for the log line). */
function shown(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'an unparsable URL';
  }
}

/**
 * Starts tracing when the standard variables ask for it (docs/tracing.md "Turn it on"):
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set, `OTEL_SDK_DISABLED` not
 * `true`, `OTEL_TRACES_EXPORTER` not `none`. Call once, before the logger and the app are built. The
 * SDK reads the rest (headers, sampler, resource, batching) from the process's environment itself.
 * Tracing that cannot start is a warning, never a server that does not start.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<TracingStatus> {
  const off = (why?: string): TracingStatus => ({ on: false, report: (logger) => why && logger.warn(why) });
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!set(endpoint) || truthy(env.OTEL_SDK_DISABLED)) return off();
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return off();
  if (set(exporter) && exporter !== 'otlp') return off(`OTEL_TRACES_EXPORTER=${exporter} is not supported (only otlp): tracing is off`);
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    return off(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported (http/protobuf or http/json, on the collector's port 4318): tracing is off`,
    );
  if (tracer) await tracer.shutdown();
  let started: Tracer;
  try {
    const { startSdk } = await import('./sdk.ts');
    started = await startSdk(protocol);
  } catch (err) {
    return off(`tracing failed to start (${(err as Error).message}): tracing is off`);
  }
  tracer = started;
  return {
    on: true,
    report(logger) {
      started.useLogger(logger);
      logger.info({ endpoint: shown(endpoint), protocol }, 'tracing on: spans exported with OTLP');
    },
  };
}

/** How long shutdown waits for the last spans to reach a collector that may be gone. */
const FLUSH_MS = 5000;

/** Exports the spans still buffered, then stops tracing (at shutdown); never fails, never waits past FLUSH_MS. */
export async function stopTracing(): Promise<void> {
  const stopping = tracer;
  tracer = undefined;
  if (!stopping) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_MS).unref()));
  await Promise.race([stopping.shutdown().catch(() => undefined), late]);
  clearTimeout(timer);
}
