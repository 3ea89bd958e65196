/**
 * The OpenTelemetry SDK, loaded by trace.ts only when tracing is turned on (docs/tracing.md): never
 * imported statically, so that a server without the variables loads none of it. The SDK reads the
 * standard variables itself: the exporter its endpoint, headers, timeout and compression; the
 * provider OTEL_TRACES_SAMPLER(_ARG) and the span limits; the batch processor OTEL_BSP_*; the
 * resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  context,
  createContextKey,
  DiagLogLevel,
  diag,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { Logger } from 'pino';
import { projectRoot } from '../root.ts';
import type { SpanKindName, Tracer } from './tracer.ts';

const KINDS: Record<SpanKindName, SpanKind> = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT };
/** Where a request's server span is kept in its context, for `requestSpan` from anywhere below it. */
const REQUEST_SPAN = createContextKey('latchkey request span');

/** The exporter the protocol names; only its package is loaded. */
async function exporterFor(protocol: 'http/protobuf' | 'http/json'): Promise<SpanExporter> {
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

/**
 * What a failed span says of its error: a code (`ECONNREFUSED`, `SQLITE_BUSY`) or the error's class,
 * never its message, which may quote a value (a constraint's key, a peer's answer).
 */
function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') return code;
  return err instanceof Error ? err.constructor.name : typeof err;
}

/** What the SDK adds to a complaint (an error, a status), as text. */
const details = (args: unknown[]) => (args.length > 0 ? { details: args.map((a) => (a instanceof Error ? a.message : String(a))) } : {});

const DIAG_LEVELS: Record<string, DiagLogLevel> = {
  NONE: DiagLogLevel.NONE,
  ERROR: DiagLogLevel.ERROR,
  WARN: DiagLogLevel.WARN,
  INFO: DiagLogLevel.INFO,
  DEBUG: DiagLogLevel.DEBUG,
  VERBOSE: DiagLogLevel.VERBOSE,
  ALL: DiagLogLevel.ALL,
};

export async function startSdk(protocol: 'http/protobuf' | 'http/json'): Promise<Tracer> {
  const { version } = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string };
  // Latchkey's name unless the operator gives one (OTEL_SERVICE_NAME, or service.name in OTEL_RESOURCE_ATTRIBUTES).
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'latchkey', 'service.version': version }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(await exporterFor(protocol))] });
  // The global provider, with AsyncLocalStorage as the context manager. W3C trace context only, not
  // baggage: what a caller puts in its baggage is not Latchkey's to pass on to upstreams and webhooks.
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const tracer = provider.getTracer('latchkey', version);

  const fail = (span: Span, err: unknown) => {
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.setAttribute('error.type', errorType(err));
  };

  return {
    span(name, kind, attributes, fn, standalone) {
      const parent = context.active();
      // Only below a request's span, and only when that one is recorded: a request the sampler left
      // out costs no more spans.
      if (!standalone && !trace.getSpan(parent)?.isRecording()) return fn(undefined);
      const span = tracer.startSpan(name, { kind: KINDS[kind], attributes }, parent);
      return context.with(trace.setSpan(parent, span), () => {
        let result: ReturnType<typeof fn>;
        try {
          result = fn(span);
        } catch (err) {
          fail(span, err);
          span.end();
          throw err;
        }
        if (!(result instanceof Promise)) {
          span.end();
          return result;
        }
        return result.then(
          (value: unknown) => {
            span.end();
            return value;
          },
          (err: unknown) => {
            fail(span, err);
            span.end();
            throw err;
          },
        ) as typeof result;
      });
    },
    start(name, kind, attributes) {
      const parent = context.active();
      if (!trace.getSpan(parent)?.isRecording()) return undefined;
      return tracer.startSpan(name, { kind: KINDS[kind], attributes }, parent);
    },
    fail,
    serve(headers, name, run) {
      const parent = propagation.extract(ROOT_CONTEXT, headers);
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER }, parent);
      context.with(trace.setSpan(parent, span).setValue(REQUEST_SPAN, span), run, undefined, span);
    },
    requestSpan: () => context.active().getValue(REQUEST_SPAN) as Span | undefined,
    inject: (headers) => propagation.inject(context.active(), headers),
    ids() {
      const spanContext = trace.getSpan(context.active())?.spanContext();
      if (!spanContext || !isSpanContextValid(spanContext)) return undefined;
      return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
    },
    useLogger(logger: Logger) {
      const log = logger.child({ component: 'opentelemetry' });
      const level = DIAG_LEVELS[(process.env.OTEL_LOG_LEVEL ?? 'WARN').trim().toUpperCase()] ?? DiagLogLevel.WARN;
      diag.setLogger(
        {
          error: (message, ...args) => log.error(details(args), message),
          warn: (message, ...args) => log.warn(details(args), message),
          info: (message, ...args) => log.info(details(args), message),
          debug: (message, ...args) => log.debug(details(args), message),
          verbose: (message, ...args) => log.trace(details(args), message),
        },
        { logLevel: level, suppressOverrideMessage: true },
      );
    },
    shutdown: () => provider.shutdown(),
  };
}
