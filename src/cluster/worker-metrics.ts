import { AggregatorRegistry, type Registry } from 'prom-client';
import { isMetricsResponse, type MetricsRequest } from './messages.ts';

/** Longer than prom-client's own wait for the workers' answers (5 s), so its error reaches us first. */
const TIMEOUT_MS = 8000;

let nextId = 1;
const pending = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
let listening = false;

/**
 * In a worker: every worker's metrics, aggregated by the primary (prom-client's AggregatorRegistry
 * lives there, since only the primary can reach every worker).
 */
export function clusterMetrics(): Promise<string> {
  if (!listening) {
    listening = true;
    process.on('message', (m: unknown) => {
      if (!isMetricsResponse(m)) return;
      const waiter = pending.get(m.id);
      pending.delete(m.id);
      if (m.text !== undefined) waiter?.resolve(m.text);
      else waiter?.reject(new Error(m.error ?? 'no metrics from the primary'));
    });
  }
  const id = nextId++;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new Error('the primary did not answer with the cluster metrics'));
    }, TIMEOUT_MS);
    pending.set(id, {
      resolve: (text) => {
        clearTimeout(timer);
        resolve(text);
      },
      reject: (err) => {
        clearTimeout(timer);
        reject(err);
      },
    });
    process.send!({ type: 'latchkey:metrics-request', id } satisfies MetricsRequest);
  });
}

/**
 * In a worker: lets the primary collect this worker's `registry`. prom-client answers the primary's
 * requests only once an AggregatorRegistry exists in the worker, so one is made here for that alone.
 */
export function shareMetrics(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry();
}
