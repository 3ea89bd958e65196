import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { get, postForm, type Fields } from './http.ts';
import { parsePrometheus, type MetricFamily } from './metrics.ts';
import { freePort } from './ports.ts';
import { ADMIN_PASSWORD } from './server.ts';

/** Latchkey in cluster mode (docs/operating-latchkey.md): the primary started as `npm start` starts it, and its workers. */
export interface LatchkeyCluster {
  url: string;
  /** The primary's pid. */
  pid: number;
  /** Everything the primary and its workers printed so far, stdout and stderr. */
  output(): string;
  /** The JSON log lines printed so far whose `msg` is `msg`. */
  logged(msg: string): Array<Record<string, unknown>>;
  /** The pids of the worker processes alive now (children of the primary running the server). */
  workerPids(): number[];
  /**
   * How many open connections of clients to the cluster's port each worker holds now, by worker pid
   * (Linux: /proc): which worker a request in flight went to.
   */
  connectionsPerWorker(): Map<number, number>;
  /** Polls `check` until it holds; fails with `what` and the output after `ms`. */
  waitFor(what: string, check: () => boolean, ms?: number): Promise<void>;
  /** Resolves when the primary has exited, with its exit code (null when a signal ended it). */
  exited: Promise<number | null>;
  /** SIGTERM to the primary, then its exit code; SIGKILL after 20 s. Harmless once it has exited. */
  stop(): Promise<number | null>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `scripts/start.mjs` with `WORKERS` workers (default 2) on a free loopback port and waits until
 * the primary logs that every worker listens. `DATABASE_URL` and `LATCHKEY_SECRET` must be those of the
 * TestServer that made the fixtures, as for any two nodes of one deployment.
 */
export async function spawnCluster(
  env: { DATABASE_URL: string; LATCHKEY_SECRET: string } & Record<string, string>,
  { workers = 2, startupMs = 90_000 }: { workers?: number; startupMs?: number } = {},
): Promise<LatchkeyCluster> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let out = '';
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH!,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: url,
      LOG_LEVEL: 'info',
      LATCHKEY_ADMIN_PASSWORD: ADMIN_PASSWORD,
      WORKERS: String(workers),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const alive = () => child.exitCode === null && child.signalCode === null;

  const logged = (msg: string) =>
    out
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          return {};
        }
      })
      .filter((l) => l.msg === msg);

  const waitFor = async (what: string, check: () => boolean, ms = 30_000) => {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}; output:\n${out}`);
      await sleep(50);
    }
  };

  const stop = async () => {
    if (alive()) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
    return exited;
  };

  // The primary may also have a child that is no worker (esbuild's service, when it rebuilt dist/).
  const workerPids = () => {
    let listing = '';
    try {
      listing = execFileSync('ps', ['--ppid', String(child.pid), '-o', 'pid=,args='], { encoding: 'utf8' });
    } catch {
      return []; // ps exits 1 when there is no such process
    }
    return listing
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.includes('scripts/start.mjs'))
      .map((l) => Number(l.split(/\s+/)[0]));
  };

  const connectionsPerWorker = () => {
    // The sockets of established TCP connections whose local port is the cluster's, by inode.
    const inodes = new Set<string>();
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      for (const row of readFileSync(table, 'utf8').split('\n').slice(1)) {
        const cols = row.trim().split(/\s+/);
        const local = cols[1]?.split(':').pop();
        if (local && parseInt(local, 16) === port && cols[3] === '01') inodes.add(cols[9]!);
      }
    }
    const held = new Map<number, number>();
    for (const pid of workerPids()) {
      let n = 0;
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        try {
          const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
          if (inode && inodes.has(inode)) n++;
        } catch {
          // closed meanwhile
        }
      }
      held.set(pid, n);
    }
    return held;
  };

  try {
    await waitFor(
      'every worker to listen',
      () => {
        if (!alive()) throw new Error(`latchkey exited with ${child.exitCode} before every worker listened:\n${out}`);
        return logged('every worker is listening').length > 0;
      },
      startupMs,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, pid: child.pid!, output: () => out, logged, workerPids, connectionsPerWorker, waitFor, exited, stop };
}

/**
 * Node's cluster primary accepts each connection and hands it to the workers in turn (round robin), so
 * requests that each open a new connection alternate between the workers, while a kept-alive connection
 * stays with one. Every request a cluster test means to spread over the workers carries this header.
 */
export const FRESH_CONNECTION = { connection: 'close' } as const;

/** A GET on a connection of its own. */
export const freshGet = (url: string, query: Fields = {}, headers: Record<string, string> = {}) =>
  get(url, query, { ...headers, ...FRESH_CONNECTION });

/** A form POST on a connection of its own. */
export const freshPost = (url: string, fields: Fields, headers: Record<string, string> = {}) =>
  postForm(url, fields, { ...headers, ...FRESH_CONNECTION });

/** A GraphQL request to `/graphql` on a connection of its own; throws unless it answered 200 without errors. */
export async function freshGraphql<T>(baseUrl: string, token: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  const res = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...FRESH_CONNECTION },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: unknown[] };
  if (res.status !== 200 || body.errors) throw new Error(`/graphql answered ${res.status}: ${JSON.stringify(body)}`);
  return body.data!;
}

/** `GET /metrics` on a connection of its own, parsed as Prometheus text by a real parser. */
export async function scrape(baseUrl: string, token?: string): Promise<MetricFamily[]> {
  const res = await freshGet(`${baseUrl}/metrics`, {}, token ? { authorization: `Bearer ${token}` } : {});
  const text = await res.text();
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${text.slice(0, 300)}`);
  return parsePrometheus(text);
}

/** The family called `name`, if the scrape has it. */
export const family = (families: MetricFamily[], name: string) => families.find((f) => f.name === name);

/**
 * The value of the counter or gauge sample of `name` whose labels are exactly `labels`; 0 when it is
 * absent (a series not yet seen). Not for histograms: the parser merges a labelled histogram's series
 * into one sample holding only the buckets.
 */
export function sampleValue(families: MetricFamily[], name: string, labels: Record<string, string>): number {
  const wanted = JSON.stringify(Object.entries(labels).sort());
  const found = family(families, name)?.metrics.find((m) => JSON.stringify(Object.entries(m.labels ?? {}).sort()) === wanted);
  return Number(found?.value ?? 0);
}
