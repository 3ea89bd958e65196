import { Agent, request } from 'node:http';

export interface LoadResult {
  requests: number;
  /** Answers other than 200. */
  failures: number;
  p50: number;
  p99: number;
}

/**
 * A closed-loop load: `connections` keep-alive connections each sending `path` again as soon as the
 * last answer arrived, for `ms` milliseconds. Latencies in milliseconds. Meant for a server in another
 * process: in the same process the load and the server would share one event loop.
 */
export async function closedLoop(
  url: string,
  path: string,
  headers: Record<string, string>,
  connections: number,
  ms: number,
): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const { hostname, port } = new URL(url);
  const latencies: number[] = [];
  let failures = 0;
  const end = performance.now() + ms;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const started = performance.now();
      const req = request({ agent, hostname, port, path, headers }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - started);
          if (res.statusCode !== 200) failures++;
          resolve();
        });
      });
      req.on('error', reject);
      req.end();
    });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) await one();
    }),
  );
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? NaN;
  return { requests: latencies.length, failures, p50: at(0.5), p99: at(0.99) };
}
