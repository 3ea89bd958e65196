import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { RequestStats } from './request-stats.ts';

/** `latchkey_logins_total`'s `result` (docs/operating-latchkey.md). */
export type LoginResult = 'success' | 'failure' | 'unavailable' | 'throttled';

/**
 * The `backend` of a login no backend claimed: an unknown name, or one throttled before any backend
 * was asked (the policy counts the account, not where it lives).
 */
export const NO_BACKEND = 'none';

/** Where a request's time is counted: the few paths tokens are checked on take a few hundred microseconds. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The metrics of docs/operating-latchkey.md in one registry of this process. The per-request ones are plain numbers until
 * scraped (request-stats.ts); the rest are prom-client's own.
 */
export function createMetrics(o: {
  backendStates: () => Promise<Record<string, 'up' | 'down'>>;
  /** Label values shown at 0 from the start, so that a rate over them exists before the first event. */
  known: { backends: string[]; grants: readonly string[]; tables: readonly string[] };
}) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: '' });

  const requests = new RequestStats(DURATION_BUCKETS);
  registry.registerMetric(requests.counter('latchkey_http_requests_total', 'HTTP requests answered, by route pattern, method and status'));
  registry.registerMetric(
    requests.histogram(
      'latchkey_http_request_duration_seconds',
      'Time from a request arriving to its response being sent, by route pattern, method and status',
    ),
  );
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  const tokens = counter('latchkey_tokens_issued_total', 'Token responses issued at the token endpoint, by grant type', ['grant']);
  const logins = counter('latchkey_logins_total', 'Password sign-ins (login page and password grant), by identity backend and result', [
    'backend',
    'result',
  ]);
  const purged = counter('latchkey_purged_rows_total', 'Expired rows deleted by the retention purge, by table', ['table']);
  // docs/access-and-claims.md: one series per application that refused someone (a client id or an SP's entity ID).
  const accessDenied = counter('latchkey_access_denied_total', "Users refused by an application's access policy, by application", [
    'application',
  ]);
  const mfaGuessing = counter(
    'latchkey_mfa_guessing_total',
    'Accounts whose wrong second-factor codes reached throttle.codeMaxFailures within throttle.codeWindow (someone holding the password is guessing codes)',
  );
  new Gauge({
    name: 'latchkey_identity_backend_up',
    help: 'Whether each identity backend answers (1) or not (0), checked at scrape time',
    labelNames: ['backend'] as const,
    registers: [registry],
    // Across workers a backend counts as up only if every worker reaches it.
    aggregator: 'min',
    async collect() {
      for (const [backend, state] of Object.entries(await o.backendStates())) this.set({ backend }, state === 'up' ? 1 : 0);
    },
  });

  for (const grant of o.known.grants) tokens.inc({ grant }, 0);
  for (const table of o.known.tables) purged.inc({ table }, 0);
  for (const backend of [...o.known.backends, NO_BACKEND]) {
    for (const result of ['success', 'failure', 'unavailable', 'throttled'] as const) logins.inc({ backend, result }, 0);
  }

  return {
    registry,
    request(route: string, method: string, status: number, seconds: number): void {
      requests.record(route, method, status, seconds);
    },
    tokenIssued(grant: string): void {
      tokens.inc({ grant });
    },
    login(backend: string, result: LoginResult): void {
      logins.inc({ backend, result });
    },
    mfaGuessing(): void {
      mfaGuessing.inc();
    },
    accessDenied(application: string): void {
      accessDenied.inc({ application });
    },
    purged(table: string, rows: number): void {
      if (rows > 0) purged.inc({ table }, rows);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
