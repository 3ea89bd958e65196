import { createRequire } from 'node:module';
import { get } from './http.ts';

/** One metric family as parse-prometheus-text-format gives it (prom2json's shape). */
export interface MetricFamily {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  metrics: Array<{ labels?: Record<string, string>; value?: string; buckets?: Record<string, string>; count?: string; sum?: string }>;
}

/**
 * A real parser of the Prometheus text format (it ships no types, hence the require). It reads
 * counters and gauges with their labels; labelled histograms it merges into one sample, so tests read
 * a histogram's type from it, not its series.
 */
export const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => MetricFamily[];

/** `/metrics`, parsed. */
export async function scrape(baseUrl: string, token?: string): Promise<MetricFamily[]> {
  const res = await get(`${baseUrl}/metrics`, {}, token ? { authorization: `Bearer ${token}` } : {});
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${await res.text()}`);
  return parsePrometheus(await res.text());
}

/** The value of the sample of `name` whose labels include `labels` (0 when there is none). */
export function sample(families: MetricFamily[], name: string, labels: Record<string, string> = {}): number {
  const family = families.find((f) => f.name === name);
  const match = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  if (!match) return 0;
  return Number(match.value ?? match.count);
}
