import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { sleep } from './processes.ts';

/**
 * A small HTTP client on node:http with keep-alive, for the set-up steps and the Node drivers.
 * Why not fetch: undici's fetch costs several times more CPU per request than node:http, and on a
 * 2-core machine the driver's CPU is taken from the server it measures.
 */
export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  agent?: Agent;
  timeoutMs?: number;
}

export const keepAliveAgent = (maxSockets: number): Agent => new Agent({ keepAlive: true, maxSockets });

const defaultAgent = keepAliveAgent(8);

/** Closes the set-up's pooled connections, so nothing keeps the bench process alive at the end. */
export const closeHttp = (): void => defaultAgent.destroy();

export function request(url: string, options: RequestOptions = {}): Promise<HttpResponse> {
  const body = options.body === undefined ? undefined : Buffer.from(options.body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: options.method ?? (body ? 'POST' : 'GET'),
        agent: options.agent ?? defaultAgent,
        headers: { ...(body ? { 'content-length': String(body.length) } : {}), ...options.headers },
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout: ${url}`)));
    req.on('error', reject);
    req.end(body);
  });
}

export const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();

export const FORM = 'application/x-www-form-urlencoded';

export function postForm(
  url: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
  agent?: Agent,
): Promise<HttpResponse> {
  return request(url, { method: 'POST', headers: { 'content-type': FORM, ...headers }, body: form(fields), agent });
}

/** The JSON body of a response that must be 200, or an error that shows what came back instead. */
export function json<T = Record<string, unknown>>(res: HttpResponse, what: string): T {
  if (res.status !== 200) throw new Error(`${what}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  try {
    return JSON.parse(res.body) as T;
  } catch {
    throw new Error(`${what}: not JSON: ${res.body.slice(0, 300)}`);
  }
}

/**
 * Polls `url` until it answers 200; returns the milliseconds from `since` to that answer. A fresh
 * connection each time (no agent): a refused connection must not poison a pool.
 */
export async function waitFor200(
  url: string,
  options: { since?: number; timeoutMs: number; alive?: () => boolean; intervalMs?: number },
): Promise<number> {
  const since = options.since ?? performance.now();
  const deadline = since + options.timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = httpRequest(url, { agent: false, timeout: 1_000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
    if (ok) return performance.now() - since;
    if (options.alive && !options.alive()) throw new Error(`${url}: the process exited before answering`);
    if (performance.now() > deadline) throw new Error(`${url} did not answer 200 within ${options.timeoutMs} ms`);
    await sleep(options.intervalMs ?? 10);
  }
}

/** Cookies a response sets, as name → value (attributes dropped), for a minimal cookie jar. */
export function setCookies(res: HttpResponse): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of res.headers['set-cookie'] ?? []) {
    const pair = line.split(';', 1)[0]!;
    const eq = pair.indexOf('=');
    if (eq > 0) out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

export const cookieHeader = (jar: Record<string, string>): string =>
  Object.entries(jar)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ');
