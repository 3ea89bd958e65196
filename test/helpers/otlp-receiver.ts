import { createServer, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { freePort } from './ports.ts';

/**
 * An OpenTelemetry collector's OTLP/HTTP trace receiver, as small as a test needs: `POST /v1/traces`
 * in protobuf (the exporters' default, `http/protobuf`) or JSON (`http/json`), decoded from the wire
 * here, not by the SDK that wrote it. The protobuf reader knows the fields of
 * opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto that spans use.
 */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  /** Status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  /** Every attribute value of its events and links, to scan with the rest. */
  otherValues: unknown[];
  resource: Record<string, unknown>;
  scope: string;
}

export interface OtlpReceiver {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  url: string;
  spans: ReceivedSpan[];
  /** Each export as it came: its content type and body (decompressed). */
  exports: Array<{ contentType: string; body: Buffer }>;
  stop(): Promise<void>;
}

/** The spans of `spans` below `root` in its trace, at any depth. */
export function spansBelow(spans: readonly ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] {
  const trace = spans.filter((s) => s.traceId === root.traceId);
  const ids = new Set([root.spanId]);
  const found: ReceivedSpan[] = [];
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of trace)
      if (!ids.has(s.spanId) && ids.has(s.parentSpanId)) {
        ids.add(s.spanId);
        found.push(s);
        grew = true;
      }
  }
  return found;
}

/** One protobuf field: its number, and the value as the wire type gives it. */
type Field = { no: number; varint?: bigint; bytes?: Buffer };

function* fields(buf: Buffer): Generator<Field> {
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[pos++];
      if (b === undefined) throw new Error('truncated varint');
      result |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return result;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    switch (key & 7) {
      case 0:
        yield { no, varint: varint() };
        break;
      case 1:
        yield { no, bytes: buf.subarray(pos, (pos += 8)) };
        break;
      case 2: {
        const len = Number(varint());
        yield { no, bytes: buf.subarray(pos, (pos += len)) };
        break;
      }
      case 5:
        yield { no, bytes: buf.subarray(pos, (pos += 4)) };
        break;
      default:
        throw new Error(`unsupported wire type ${key & 7}`);
    }
  }
}

/** AnyValue: string, bool, int, double, array, kvlist, bytes. */
function anyValue(buf: Buffer): unknown {
  for (const f of fields(buf)) {
    if (f.no === 1) return f.bytes!.toString('utf8');
    if (f.no === 2) return f.varint !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.varint!));
    if (f.no === 4) return f.bytes!.readDoubleLE(0);
    if (f.no === 5) return [...fields(f.bytes!)].filter((v) => v.no === 1).map((v) => anyValue(v.bytes!));
    if (f.no === 6) return keyValues([...fields(f.bytes!)].filter((v) => v.no === 1).map((v) => v.bytes!));
    if (f.no === 7) return Buffer.from(f.bytes!);
  }
  return undefined;
}

/** KeyValue messages (1 key, 2 value) as one object. */
function keyValues(list: Buffer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list) {
    let key = '';
    let value: unknown;
    for (const f of fields(kv)) {
      if (f.no === 1) key = f.bytes!.toString('utf8');
      if (f.no === 2) value = anyValue(f.bytes!);
    }
    out[key] = value;
  }
  return out;
}

const attributesOf = (buf: Buffer, no: number) => keyValues([...fields(buf)].filter((f) => f.no === no).map((f) => f.bytes!));

function protobufSpans(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of fields(body)) {
    if (rs.no !== 1) continue;
    let resource: Record<string, unknown> = {};
    const scopeSpans: Buffer[] = [];
    for (const f of fields(rs.bytes!)) {
      if (f.no === 1) resource = attributesOf(f.bytes!, 1);
      if (f.no === 2) scopeSpans.push(f.bytes!);
    }
    for (const ss of scopeSpans) {
      let scope = '';
      for (const f of fields(ss)) {
        if (f.no === 1) for (const g of fields(f.bytes!)) if (g.no === 1) scope = g.bytes!.toString('utf8');
      }
      for (const f of fields(ss)) {
        if (f.no !== 2) continue;
        const span: ReceivedSpan = {
          traceId: '',
          spanId: '',
          parentSpanId: '',
          name: '',
          kind: 0,
          attributes: {},
          status: { code: 0, message: '' },
          otherValues: [],
          resource,
          scope,
        };
        const attributes: Buffer[] = [];
        for (const g of fields(f.bytes!)) {
          if (g.no === 1) span.traceId = g.bytes!.toString('hex');
          else if (g.no === 2) span.spanId = g.bytes!.toString('hex');
          else if (g.no === 4) span.parentSpanId = g.bytes!.toString('hex');
          else if (g.no === 5) span.name = g.bytes!.toString('utf8');
          else if (g.no === 6) span.kind = Number(g.varint);
          else if (g.no === 9) attributes.push(g.bytes!);
          // Events (11) and links (13) carry their attributes in field 3 and 4.
          else if (g.no === 11) span.otherValues.push(...Object.values(attributesOf(g.bytes!, 3)));
          else if (g.no === 13) span.otherValues.push(...Object.values(attributesOf(g.bytes!, 4)));
          else if (g.no === 15)
            for (const h of fields(g.bytes!)) {
              if (h.no === 2) span.status.message = h.bytes!.toString('utf8');
              if (h.no === 3) span.status.code = Number(h.varint);
            }
        }
        span.attributes = keyValues(attributes);
        spans.push(span);
      }
    }
  }
  return spans;
}

/** OTLP/JSON: ids in hex (the specification's rule for JSON), values as `{ stringValue }` and the like. */
type JsonValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
  kvlistValue?: { values?: JsonKeyValue[] };
  bytesValue?: string;
};
type JsonKeyValue = { key: string; value?: JsonValue };

function jsonValue(v: JsonValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(jsonValue);
  if (v.kvlistValue) return jsonAttributes(v.kvlistValue.values);
  if (v.bytesValue !== undefined) return Buffer.from(v.bytesValue, 'base64');
  return undefined;
}

const jsonAttributes = (list: JsonKeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));

function jsonSpans(body: Buffer): ReceivedSpan[] {
  const doc = JSON.parse(body.toString('utf8')) as {
    resourceSpans?: Array<{
      resource?: { attributes?: JsonKeyValue[] };
      scopeSpans?: Array<{
        scope?: { name?: string };
        spans?: Array<{
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          attributes?: JsonKeyValue[];
          status?: { code?: number; message?: string };
          events?: Array<{ attributes?: JsonKeyValue[] }>;
          links?: Array<{ attributes?: JsonKeyValue[] }>;
        }>;
      }>;
    }>;
  };
  return (doc.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
        otherValues: [...(s.events ?? []), ...(s.links ?? [])].flatMap((e) => Object.values(jsonAttributes(e.attributes))),
        resource: jsonAttributes(rs.resource?.attributes),
        scope: ss.scope?.name ?? '',
      })),
    ),
  );
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const port = await freePort();
  const spans: ReceivedSpan[] = [];
  const exports: OtlpReceiver['exports'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const contentType = String(req.headers['content-type'] ?? '');
      exports.push({ contentType, body });
      try {
        const json = contentType.startsWith('application/json');
        spans.push(...(json ? jsonSpans(body) : protobufSpans(body)));
        // An empty ExportTraceServiceResponse: everything accepted.
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : undefined);
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    exports,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
