import type { Metric, MetricValue } from 'prom-client';

interface Series {
  route: string;
  method: string;
  status: number;
  count: number;
  sum: number;
  /** Requests per bucket, not cumulative; the last slot is above every bound (`+Inf`). */
  perBucket: number[];
}

type Labels = 'route' | 'method' | 'status' | 'le';

/**
 * Request counts and durations by route, method and status, kept as plain numbers and turned into
 * Prometheus series only when scraped. prom-client's Counter and Histogram hash their label values on
 * every call, which on `/me` cost a tenth of the throughput; here a request is three map lookups and
 * a few additions. The two metrics are registered as prom-client metrics (`get()` in its format), so
 * the text exposition and the cluster aggregation are prom-client's own.
 */
export class RequestStats {
  private readonly routes = new Map<string, Map<string, Map<number, Series>>>();

  constructor(private readonly bounds: number[]) {}

  record(route: string, method: string, status: number, seconds: number): void {
    let methods = this.routes.get(route);
    if (!methods) this.routes.set(route, (methods = new Map()));
    let statuses = methods.get(method);
    if (!statuses) methods.set(method, (statuses = new Map()));
    let s = statuses.get(status);
    if (!s)
      statuses.set(status, (s = { route, method, status, count: 0, sum: 0, perBucket: new Array<number>(this.bounds.length + 1).fill(0) }));
    s.count++;
    s.sum += seconds;
    let i = 0;
    while (i < this.bounds.length && seconds > this.bounds[i]!) i++;
    s.perBucket[i]!++;
  }

  private *all(): Generator<Series> {
    for (const methods of this.routes.values()) for (const statuses of methods.values()) yield* statuses.values();
  }

  /** `latchkey_http_requests_total` */
  counter(name: string, help: string): Metric<Labels> {
    const get = async () => ({
      name,
      help,
      type: 'counter' as const,
      aggregator: 'sum' as const,
      values: [...this.all()].map((s): MetricValue<Labels> => ({ labels: labelsOf(s), value: s.count })),
    });
    return asMetric(name, help, 'counter', get);
  }

  /** `latchkey_http_request_duration_seconds` */
  histogram(name: string, help: string): Metric<Labels> {
    const get = async () => {
      const values: Array<MetricValue<Labels> & { metricName: string }> = [];
      for (const s of this.all()) {
        const labels = labelsOf(s);
        let cumulative = 0;
        this.bounds.forEach((le, i) => {
          cumulative += s.perBucket[i]!;
          values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: le as unknown as string }, value: cumulative });
        });
        values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: s.count });
        values.push({ metricName: `${name}_sum`, labels, value: s.sum });
        values.push({ metricName: `${name}_count`, labels, value: s.count });
      }
      return { name, help, type: 'histogram' as const, aggregator: 'sum' as const, values };
    };
    return asMetric(name, help, 'histogram', get);
  }
}

const labelsOf = (s: Series) => ({ route: s.route, method: s.method, status: String(s.status) });

/** The shape a prom-client Registry registers and reads: a name, a type and `get()`. */
function asMetric(name: string, help: string, type: 'counter' | 'histogram', get: () => Promise<unknown>): Metric<Labels> {
  return { name, help, type, aggregator: 'sum', get, reset: () => undefined } as unknown as Metric<Labels>;
}
