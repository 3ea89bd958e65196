/** The IPC messages between the primary and its workers (besides prom-client's own). */

/** A worker asks the primary for every worker's metrics, aggregated. */
export interface MetricsRequest {
  type: 'latchkey:metrics-request';
  id: number;
}

export interface MetricsResponse {
  type: 'latchkey:metrics-response';
  id: number;
  text?: string;
  error?: string;
}

export const isMetricsRequest = (m: unknown): m is MetricsRequest =>
  typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'latchkey:metrics-request';

export const isMetricsResponse = (m: unknown): m is MetricsResponse =>
  typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'latchkey:metrics-response';
