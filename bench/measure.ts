import { request, type HttpResponse } from './http.ts';
import { competingProcesses, cpuSeconds, pathPeakRss, resetPathPeak } from './processes.ts';
import type { Measurement } from './measurement.ts';
import type { BenchOptions } from './options.ts';
import { runWrk, requestScript, writeScript, type WrkRequest } from './wrk.ts';

export interface BenchContext {
  options: BenchOptions;
  workDir: string;
  log(message: string): void;
  /** Counted runs during which other heavy work (a test run) was seen: label → what ran. */
  disturbed: Map<string, Set<string>>;
}

/** One server's end of a path: where wrk sends the request, and what a right answer looks like. */
export interface WrkTarget {
  name: string;
  url: string;
  request: WrkRequest;
  /** The server process, whose CPU use during the run is reported. */
  pid: number;
  /** What is wrong with an answer, or undefined when it is the expected one. */
  expect(res: HttpResponse): string | undefined;
}

/** Checks for the probes: a 200 whose JSON body satisfies `ok`. */
export function expectJson(ok: (body: Record<string, unknown>) => boolean, what: string): (res: HttpResponse) => string | undefined {
  return (res) => {
    if (res.status !== 200) return `HTTP ${res.status} ${res.body.slice(0, 300)}`;
    try {
      return ok(JSON.parse(res.body) as Record<string, unknown>) ? undefined : `expected ${what}, got ${res.body.slice(0, 300)}`;
    } catch {
      return `not JSON: ${res.body.slice(0, 300)}`;
    }
  };
}

/**
 * Sends the request once and checks the answer before any load: a misconfigured path answers errors
 * fast, and a fast error is the last thing a benchmark should count.
 */
export async function probe(target: WrkTarget, label: string): Promise<void> {
  const { method, headers, body, bodies } = target.request;
  const res = await request(target.url, { method, headers, body: bodies?.[0] ?? body });
  const wrong = target.expect(res);
  if (wrong) throw new Error(`${label} at ${target.name} (${target.url}): ${wrong}`);
}

/** Probe, an uncounted warm-up run, then the counted run, all with wrk. */
export async function measureWithWrk(ctx: BenchContext, label: string, target: WrkTarget): Promise<Measurement> {
  const { options: o } = ctx;
  await probe(target, label);
  resetPathPeak(target.pid);
  const script = writeScript(ctx.workDir, `${label}-${target.name}`, requestScript(target.request));
  ctx.log(`${label} at ${target.name}: warm-up ${o.warmupSeconds} s, then ${o.seconds} s`);
  await runWrk(target.url, script, o.warmupSeconds, o);
  return countedRun(ctx, `${label} at ${target.name}`, target.pid, () => runWrk(target.url, script, o.seconds, o));
}

/**
 * A counted run: adds the server's CPU use during it (a server below 100 % of a core while requests
 * queue is waiting on something, a lock, a pool, the database; not computing), notes other heavy
 * work seen just before or after it (two shared cores make such a figure worthless), logs it.
 */
export async function countedRun(
  ctx: BenchContext,
  label: string,
  pid: number | undefined,
  run: () => Promise<Measurement>,
): Promise<Measurement> {
  const before = competingProcesses();
  const cpu0 = pid ? cpuSeconds(pid) : 0;
  const t0 = performance.now();
  let m = await run();
  if (pid) m = { ...m, cpuPercent: ((cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000)) * 100, peakRssBytes: pathPeakRss(pid) };
  const others = [...before, ...competingProcesses()];
  if (others.length > 0) ctx.disturbed.set(label, new Set(others.map((p) => p.replace(/^\d+ /, ''))));
  const cpu = m.cpuPercent === undefined ? '' : `, server CPU ${m.cpuPercent.toFixed(0)} %`;
  const rss = m.peakRssBytes === undefined ? '' : `, peak RSS ${Math.round(m.peakRssBytes / 2 ** 20)} MiB`;
  ctx.log(
    `  ${Math.round(m.rate)}/s, p99 ${m.p99Ms?.toFixed(1) ?? '?'} ms${cpu}${rss}${m.errors ? `, ${m.errors} errors (${m.firstError ?? 'no detail'})` : ''}${others.length ? ' [other load was running]' : ''}`,
  );
  return m;
}
