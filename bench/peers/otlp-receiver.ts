/**
 * The collector of the tracing phase (bench/tracing.ts): the test suite's OTLP/HTTP receiver
 * (test/helpers/otlp-receiver.ts), which decodes each export's protobuf from the wire and answers 200
 * as a collector does, so the exporter in Latchkey works as in production. Its own process, so that
 * its work is neither the server's nor the bench's. It keeps counts, not spans (a run exports
 * hundreds of thousands): `GET /counts` on PORT says where to export and what has arrived so far.
 */
import { createServer } from 'node:http';
import { startOtlpReceiver } from '../../test/helpers/otlp-receiver.ts';

export interface OtlpCounts {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  url: string;
  exports: number;
  spans: number;
  /** Server spans (one per traced request) by name, e.g. `GET /connect/v10/userinfo`. */
  requests: Record<string, number>;
}

const receiver = await startOtlpReceiver();
const counts: OtlpCounts = { url: receiver.url, exports: 0, spans: 0, requests: {} };

/** Moves what the receiver holds into the counts and lets it go. */
function drain(): void {
  counts.exports += receiver.exports.length;
  counts.spans += receiver.spans.length;
  for (const span of receiver.spans) if (span.kind === 2) counts.requests[span.name] = (counts.requests[span.name] ?? 0) + 1;
  receiver.exports.length = 0;
  receiver.spans.length = 0;
}
setInterval(drain, 250);

createServer((req, res) => {
  if (req.url !== '/counts') {
    res.writeHead(404).end();
    return;
  }
  drain();
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
}).listen(Number(process.env.PORT), '127.0.0.1');
