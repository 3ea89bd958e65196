/** One counted run of one path against one server. */
export interface Measurement {
  /** Completed operations per second (requests, flows or binds). */
  rate: number;
  /** 99th percentile latency of one operation, in ms (wrk's, or the Node driver's own timing). */
  p99Ms: number | null;
  /** Operations completed in the run, errors included. */
  requests: number;
  /** Failed operations: non-2xx answers, socket errors, thrown errors. */
  errors: number;
  seconds: number;
  tool: string;
  /** CPU the measured server used during the run, in % of one core (200 % = both cores here). */
  cpuPercent?: number;
  /** Peak RSS (VmHWM) of the measured server from the path's warm-up to the end of its counted run. */
  peakRssBytes?: number;
  /** What the failed operations were, to say why a run is invalid. */
  firstError?: string;
}

/** More than this share of errors and the figure is not a measurement of the path: flagged. */
export const MAX_ERROR_SHARE = 0.001;

export const errorShare = (m: Measurement): number => (m.requests > 0 ? m.errors / m.requests : 1);

export function percentile(sortedAscending: number[], p: number): number | null {
  if (sortedAscending.length === 0) return null;
  const i = Math.min(sortedAscending.length - 1, Math.max(0, Math.ceil((p / 100) * sortedAscending.length) - 1));
  return sortedAscending[i]!;
}

/**
 * A closed loop: `concurrency` workers each run `op` back to back until `seconds` have passed, the
 * way wrk's connections do. Operations in flight at the deadline finish and count; the rate is over
 * the time until the last one finished.
 */
export async function closedLoop(
  concurrency: number,
  seconds: number,
  tool: string,
  op: (worker: number) => Promise<void>,
): Promise<Measurement> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          await op(worker);
          latencies.push(performance.now() - t0);
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
          // An operation that fails at once would spin: a failing run is invalid anyway, slow it down.
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    rate: latencies.length / elapsed,
    p99Ms: percentile(latencies, 99),
    requests: latencies.length + errors,
    errors,
    seconds,
    tool,
    ...(firstError ? { firstError } : {}),
  };
}
