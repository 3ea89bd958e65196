import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freshDatabase } from './database.ts';
import { form, FORM, json, request, waitFor200 } from './http.ts';
import { REPO, startLatchkey, type Latchkey } from './latchkey.ts';
import { expectJson, measureWithWrk, type BenchContext, type WrkTarget } from './measure.ts';
import type { Measurement } from './measurement.ts';
import { TOKEN_PATH } from './oauth-client.ts';
import type { OtlpCounts } from './peers/otlp-receiver.ts';
import { commandLine, cpuSeconds, spawnTracked } from './processes.ts';
import type { PathResult } from './report.ts';
import { seed, type Seed } from './seed.ts';
import { freePort } from '../test/helpers/ports.ts';

/** The two hot paths tracing is measured on: one with real work (a token written), one with little else. */
const PATHS = [
  { key: 'client_credentials', label: '`client_credentials`', span: `POST ${TOKEN_PATH}` },
  { key: 'userinfo', label: '`/connect/v10/userinfo`', span: 'GET /connect/v10/userinfo' },
] as const;
type TracedPath = (typeof PATHS)[number]['key'];

/** Each path untraced, measured in this run: the peer of its traced rows. */
export type Untraced = Record<TracedPath, Measurement>;

/** The samplers measured (docs/tracing.md "Sampling"): the default, and a share an operator would pick for throughput. */
const SAMPLINGS = [
  { suffix: 'traced', label: 'every request traced', env: { OTEL_TRACES_SAMPLER: 'parentbased_always_on' }, share: 1 },
  {
    suffix: 'sampled',
    label: '10 % of requests traced',
    env: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
    share: 0.1,
  },
] as const;

export interface TracingPhase {
  paths: PathResult[];
  /** What arrived at the receiver, what was dropped, what the receiver cost: lines for the report. */
  notes: string[];
  database: string;
  /** The always-on server's start, peak RSS and command line (the report of `--only tracing`). */
  startMs: number;
  peakRssBytes: number;
  serverCommand: string;
}

interface Receiver {
  pid: number;
  counts(): Promise<OtlpCounts>;
  stop(): Promise<void>;
}

/** The OTLP/HTTP receiver (bench/peers/otlp-receiver.ts) in its own process, as the peers are started. */
async function startReceiver(workDir: string): Promise<Receiver> {
  const port = await freePort();
  const control = `http://127.0.0.1:${port}/counts`;
  const tracked = spawnTracked('OTLP receiver', process.execPath, ['--import', 'tsx', join(REPO, 'bench', 'peers', 'otlp-receiver.ts')], {
    cwd: REPO,
    env: { ...process.env, PORT: String(port) },
    logFile: join(workDir, 'otlp-receiver.log'),
  });
  try {
    await waitFor200(control, { timeoutMs: 30_000, alive: tracked.running, intervalMs: 50 });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- OTLP receiver log ---\n${tracked.output()}`);
  }
  return {
    pid: tracked.pid,
    counts: async () => json<OtlpCounts>(await request(control), 'OTLP receiver counts'),
    stop: () => tracked.stop(),
  };
}

function targets(server: Latchkey, s: Seed, name: string): Record<TracedPath, WrkTarget> {
  return {
    client_credentials: {
      name,
      pid: server.serverPid,
      url: server.url + TOKEN_PATH,
      request: {
        method: 'POST',
        headers: { 'Content-Type': FORM },
        body: form({ grant_type: 'client_credentials', client_id: s.service.clientId, client_secret: s.service.clientSecret }),
      },
      expect: expectJson((b) => typeof b.access_token === 'string', 'an access_token'),
    },
    userinfo: {
      name,
      pid: server.serverPid,
      url: `${server.url}/connect/v10/userinfo`,
      request: { method: 'GET', headers: { Authorization: `Bearer ${s.userAccessToken}` } },
      expect: expectJson((b) => typeof b.sub === 'string', "the user's claims"),
    },
  };
}

/** A Latchkey on a fresh database, seeded as the main one is (one user is all these paths need). */
async function seededServer(ctx: BenchContext, name: string, env?: Record<string, string>) {
  const database = await freshDatabase(ctx.options.database, ctx.workDir, name);
  const server = await startLatchkey({ name, workDir: ctx.workDir, database, config: {}, log: ctx.log, ...(env ? { env } : {}) });
  return { server, database, seeded: await seed(server, 1) };
}

/** `--only tracing`: the untraced side, on a server of its own, just before the traced ones. */
async function measureUntraced(ctx: BenchContext): Promise<Untraced> {
  ctx.log('tracing: a Latchkey without tracing, the peer of the traced rows');
  const { server, seeded } = await seededServer(ctx, 'untraced');
  const t = targets(server, seeded, 'Latchkey untraced');
  const untraced = {
    client_credentials: await measureWithWrk(ctx, 'client_credentials', t.client_credentials),
    userinfo: await measureWithWrk(ctx, 'userinfo', t.userinfo),
  };
  await server.stop();
  return untraced;
}

/** What the SDK said it lost (docs/tracing.md: a warning per burst of drops, an error per lost batch). */
function lostSpans(logFile: string): { dropped: number; failedExports: number } {
  const log = readFileSync(logFile, 'utf8');
  const dropped = [...log.matchAll(/Dropped (\d+) spans/g)].reduce((n, m) => n + Number(m[1]), 0);
  const failedExports = log.split('\n').filter((l) => l.includes('"component":"opentelemetry"') && l.includes('"level":50')).length;
  return { dropped, failedExports };
}

const num = (n: number) => Math.round(n).toLocaleString('en-US');

/**
 * What OpenTelemetry tracing costs on the hot paths (docs/tracing.md "What tracing costs"):
 * a Latchkey per sampler, started as `npm start` runs it with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
 * a real OTLP/HTTP receiver on loopback (the SDK's defaults otherwise: protobuf, batches of 512), its
 * client_credentials and userinfo driven with wrk as the hot paths are. The peer of each row is the
 * same path untraced in this run: the main server's (`untraced`), or, alone (`--only tracing`), a
 * server of its own measured first. Fails unless the traced requests' spans arrived at the receiver.
 */
export async function tracingPhase(ctx: BenchContext, untraced?: Untraced): Promise<TracingPhase> {
  const receiver = await startReceiver(ctx.workDir);
  const peers = untraced ?? (await measureUntraced(ctx));
  const { url } = await receiver.counts();
  const paths: PathResult[] = [];
  const notes = [
    `Tracing: each traced server exports with OTLP/HTTP protobuf (the SDK's default batching: 512 spans a batch, 2,048 queued at most) to ${url}/v1/traces, a receiver in its own process on this machine that decodes every export and answers 200 (bench/peers/otlp-receiver.ts).`,
  ];
  let first: Omit<TracingPhase, 'paths' | 'notes'> | undefined;
  for (const sampling of SAMPLINGS) {
    const name = `traced-${sampling.suffix}`;
    const sampler = Object.values(sampling.env).join(' ');
    ctx.log(`tracing: a Latchkey with ${sampling.label} (${sampler}), spans to the OTLP receiver`);
    const { server, database, seeded } = await seededServer(ctx, name, { OTEL_EXPORTER_OTLP_ENDPOINT: url, ...sampling.env });
    const t = targets(server, seeded, `Latchkey (${sampling.label})`);
    const before = await receiver.counts();
    const receiverCpu: number[] = [];
    const measured: Partial<Untraced> = {};
    for (const path of PATHS) {
      const cpu0 = cpuSeconds(receiver.pid);
      const t0 = performance.now();
      const m = await measureWithWrk(ctx, `${path.key} (${sampling.label})`, t[path.key]);
      receiverCpu.push(((cpuSeconds(receiver.pid) - cpu0) / ((performance.now() - t0) / 1000)) * 100);
      measured[path.key] = m;
      paths.push({
        key: `${path.key}_${sampling.suffix}` as const,
        label: `${path.label}, ${sampling.label} (\`${sampler}\`)`,
        unit: 'req/s',
        method: `driven as the hot path ${path.key} (bench/hot-paths.ts), on a Latchkey of its own (fresh database) with OTEL_EXPORTER_OTLP_ENDPOINT set and the sampler ${sampler}; the peer is ${path.key} on an untraced Latchkey in this run`,
        latchkey: m,
        peer: { name: 'untraced, same run', measurement: peers[path.key] },
      });
    }
    const peakRssBytes = server.peakRss();
    const serverCommand = commandLine(server.serverPid);
    // Its shutdown sends the last batch: every span of its requests has arrived once it has stopped.
    await server.stop();
    const after = await receiver.counts();
    const lost = lostSpans(join(ctx.workDir, `${name}.log`));
    const received = PATHS.map((p) => {
      const spans = (after.requests[p.span] ?? 0) - (before.requests[p.span] ?? 0);
      const counted = measured[p.key]!.requests;
      // The warm-up's requests are traced too, so at least the counted run's share must have arrived.
      if (spans < counted * sampling.share * 0.9)
        throw new Error(
          `tracing (${sampling.label}): the receiver got ${spans} spans named "${p.span}" for ${counted} requests counted (${JSON.stringify(after.requests)}); dropped ${lost.dropped}, failed exports ${lost.failedExports}`,
        );
      return `${num(spans)} ${p.label} request spans for ${num(counted)} requests counted (plus the warm-up's)`;
    });
    const perRequest =
      (after.spans - before.spans) / PATHS.reduce((n, p) => n + (after.requests[p.span] ?? 0) - (before.requests[p.span] ?? 0), 0);
    notes.push(
      `- ${sampling.label}: the receiver got ${received.join(' and ')}, ${num(after.spans - before.spans)} spans in all (${perRequest.toFixed(1)} a request) in ${num(after.exports - before.exports)} exports; the SDK dropped ${num(lost.dropped)} spans and failed ${lost.failedExports} exports; the receiver used ${receiverCpu.map((c) => `${c.toFixed(0)} %`).join(' and ')} of a core during the two paths (warm-up and counted run); the server started in ${(server.startMs / 1000).toFixed(2)} s.`,
    );
    first ??= { database: database.description, startMs: server.startMs, peakRssBytes, serverCommand };
  }
  await receiver.stop();
  return { paths, notes, ...first! };
}
