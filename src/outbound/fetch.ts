import http from 'node:http';
import https from 'node:https';
import { activeTracer, outboundSpan, tracingOn, type Span } from '../telemetry/trace.ts';
import type { AddressRules } from './address-rules.ts';
import { guardedLookup } from './guarded-lookup.ts';
import { OutboundError } from './outbound-error.ts';
import { bareHost, urlRefusal } from './url-check.ts';

export interface OutboundRequest {
  /** @default "GET" */
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The whole exchange (connect, answer, body) gives up after this. */
  timeoutMs: number;
  /** The most answer bytes read; a longer answer is an error, cut off as soon as it passes this. */
  maxBytes: number;
  /** Only the status matters (a notice delivered): the body is not read. @default false */
  statusOnly?: boolean;
  /** Cuts the call short (shutdown, the caller's own timeout); it then fails with the signal's reason. */
  signal?: AbortSignal;
}

export interface OutboundAnswer {
  status: number;
  statusText: string;
  /** As received, in order, repeated names included. */
  headers: Array<[string, string]>;
  body: Buffer;
}

const KIB = 1024;
const size = (bytes: number) => (bytes % KIB === 0 ? `${bytes / KIB} KiB` : `${bytes} bytes`);

/** A failure of node:http as the fixed words of docs/decisions.md: never its message, which may quote the peer. */
function connectFailure(err: NodeJS.ErrnoException): OutboundError {
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return new OutboundError('connect', 'unknown host');
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') return new OutboundError('connect', 'connection reset');
  if (err.code?.startsWith('HPE_')) return new OutboundError('bad-answer', 'not an HTTP answer');
  if (err.code?.startsWith('ERR_TLS') || /CERT|SSL/.test(err.code ?? '')) return new OutboundError('connect', 'TLS failed');
  return new OutboundError('connect', 'cannot connect');
}

/**
 * The one way Latchkey calls out (client JWKS, back-channel logout, upstream providers; docs/decisions.md
 * "Outbound fetches"). Unlike global fetch it: refuses link-local, unspecified and configured
 * networks, for IP literals before connecting and for names as they resolve; never follows a
 * redirect (a 3xx is an answer like any other, to a caller that checks the status); reads at most
 * `maxBytes`, cutting the connection past them rather than buffering what a server sends; and fails
 * with an `OutboundError` whose reason is fixed words, whatever the server said.
 */
export function outboundFetch(target: string | URL, rules: AddressRules, req: OutboundRequest): Promise<OutboundAnswer> {
  return tracingOn() ? tracedFetch(target, rules, req) : send(target, rules, req);
}

/**
 * The call in an HTTP client span (docs/tracing.md), with `traceparent` sent along: a child of the
 * request that made it, or a trace of its own for a background worker's delivery (a logout notice,
 * a webhook). The URL without its query (which may carry a code or a token) and without any user
 * or password; the headers and bodies never.
 */
function tracedFetch(target: string | URL, rules: AddressRules, req: OutboundRequest): Promise<OutboundAnswer> {
  const method = req.method ?? 'GET';
  let attributes: Record<string, string | number> = { 'http.request.method': method };
  try {
    const url = new URL(target);
    attributes = {
      ...attributes,
      'url.full': `${url.protocol}//${url.host}${url.pathname}`,
      'server.address': bareHost(url),
      'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    };
  } catch {
    // Refused by send() in its own words; the span says only the method.
  }
  const tracer = activeTracer();
  return outboundSpan(method, attributes, (span: Span | undefined) => {
    const headers: Record<string, string> = { ...req.headers };
    tracer.inject(headers);
    return send(target, rules, { ...req, headers }).then((answer) => {
      span?.setAttribute('http.response.status_code', answer.status);
      if (span && answer.status >= 400) tracer.fail(span, { code: String(answer.status) });
      return answer;
    });
  });
}

function send(target: string | URL, rules: AddressRules, req: OutboundRequest): Promise<OutboundAnswer> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return Promise.reject(new OutboundError('refused', 'not a URL'));
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(new OutboundError('refused', 'not http or https'));
  // net.connect does not call the lookup for an IP literal: it is checked here instead.
  if (urlRefusal(url, rules)) return Promise.reject(new OutboundError('refused', 'refused address'));
  if (req.signal?.aborted) return Promise.reject(req.signal.reason);

  return new Promise<OutboundAnswer>((resolve, reject) => {
    let request: http.ClientRequest;
    try {
      request = (url.protocol === 'https:' ? https : http).request({
        protocol: url.protocol,
        hostname: bareHost(url),
        port: url.port || undefined,
        path: url.pathname + url.search,
        method: req.method ?? 'GET',
        // A length, not chunks: some receivers refuse a chunked POST.
        headers: {
          ...req.headers,
          host: url.host,
          ...(req.body !== undefined ? { 'content-length': String(Buffer.byteLength(req.body)) } : {}),
        },
        // One connection per call: no pool keeps a socket to a host whose name now points elsewhere.
        agent: false,
        lookup: guardedLookup(rules),
      });
    } catch {
      // A header value Node refuses to send: the caller's mistake, said in fixed words all the same.
      return reject(new OutboundError('refused', 'request not sendable'));
    }
    let settled = false;
    const settle = (err: unknown, answer?: OutboundAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      // Whatever is still coming is not wanted: closing the socket stops the server's sending too.
      request.destroy();
      if (answer) resolve(answer);
      else reject(err);
    };
    const onAbort = () => settle(req.signal!.reason);
    const timer = setTimeout(
      () => settle(new OutboundError('timeout', `no answer in ${Math.round(req.timeoutMs / 100) / 10} s`)),
      req.timeoutMs,
    );
    req.signal?.addEventListener('abort', onAbort, { once: true });

    request.on('error', (err: NodeJS.ErrnoException) => settle(err instanceof OutboundError ? err : connectFailure(err)));
    request.on('response', (res) => {
      const headers: Array<[string, string]> = [];
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!]);
      const answer = (body: Buffer): OutboundAnswer => ({
        status: res.statusCode ?? 0,
        statusText: res.statusMessage ?? '',
        headers,
        body,
      });
      if (req.statusOnly) return settle(undefined, answer(Buffer.alloc(0)));
      const tooLarge = () => settle(new OutboundError('too-large', `answer larger than ${size(req.maxBytes)}`));
      if (Number(res.headers['content-length']) > req.maxBytes) return tooLarge();
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > req.maxBytes) return tooLarge();
        chunks.push(chunk);
      });
      res.on('end', () => settle(undefined, answer(Buffer.concat(chunks))));
      res.on('aborted', () => settle(new OutboundError('connect', 'answer cut short')));
      res.on('error', () => settle(new OutboundError('connect', 'answer cut short')));
    });
    request.end(req.body);
  });
}
