import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { RequestStats } from './request-stats.ts';

/** `latchkey_logins_total`'s `result` (docs/operating-latchkey.md). */
export type LoginResult = 'success' | 'failure' | 'unavailable' | 'throttled';

/**
 * The `backend` of a login no backend claimed: an unknown name, or one throttled before any backend
 * was asked (the policy counts the account, not where it lives).
 */
export const NO_BACKEND = 'none';

/**
 * A backend's last directory sync (docs/directory-sync.md "Watching it"), as its database row keeps
 * it: every process reads the same row, so every worker of a cluster reports the same values.
 */
export interface DirectorySyncState {
  backend: string;
  users: number;
  created: number;
  updated: number;
  deprovisioned: number;
  reenabled: number;
  /** ms since the epoch; null before the first pass that applied. */
  lastSuccessAt: number | null;
  /** The last pass was refused (it would have deprovisioned more than `maxLeaverShare`). */
  refused: boolean;
}

/**
 * An event sink's place in the durable queue of audit events going out (docs/operating-latchkey.md
 * "Metrics"), as its database row keeps it: every process reads the same rows.
 */
export interface EventSinkLag {
  /** `syslog`, `webhook:<id>`. */
  sink: string;
  /** The age of the oldest event it has still to deliver (s); 0 when it is caught up. */
  lagSeconds: number;
  /** The events it has still to deliver, counted up to a cap. */
  backlog: number;
}

/** A directory sync pass takes from well under a second to a minute or two (100,000 users). */
const SYNC_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];

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
  /** The backends with directory sync, read at scrape time (docs/directory-sync.md). */
  directorySyncs?: () => Promise<DirectorySyncState[]>;
  /** The event sinks (webhooks, syslog), read at scrape time. */
  eventSinks?: () => Promise<EventSinkLag[]>;
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

  const syncDuration = new Histogram({
    name: 'latchkey_directory_sync_duration_seconds',
    help: 'How long each directory sync pass took, by backend (applied, refused or failed alike)',
    labelNames: ['backend'] as const,
    buckets: SYNC_BUCKETS,
    registers: [registry],
  });
  directorySyncGauges(registry, o.directorySyncs);
  eventSinkGauges(registry, o.eventSinks);

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
    /**
     * Desktop single sign-on's refusals (docs/identity-backends.md "Desktop single sign-on"): the counter exists only on
     * a server where a backend has `kerberos`, made once at start with every reason at 0; the function counts one.
     */
    kerberosRefusals(reasons: readonly string[]): (reason: string) => void {
      const refused = counter('latchkey_kerberos_refused_total', 'Negotiate (Kerberos) sign-ins refused, by reason', ['reason']);
      for (const reason of reasons) refused.inc({ reason }, 0);
      return (reason) => refused.inc({ reason });
    },
    purged(table: string, rows: number): void {
      if (rows > 0) purged.inc({ table }, rows);
    },
    directorySyncPass(backend: string, seconds: number): void {
      syncDuration.observe({ backend }, seconds);
    },
  };
}

/**
 * The gauges of the last directory sync of each backend, read from the database at scrape time: the
 * pass may have run in another worker or process (or `latchkey sync`), and every worker reads the same
 * row, so across workers the values are the same and `max` keeps them as they are (a sum would count
 * them once per worker). One read serves the three gauges of a scrape.
 */
function directorySyncGauges(registry: Registry, read?: () => Promise<DirectorySyncState[]>): void {
  if (!read) return;
  let reading: Promise<DirectorySyncState[] | undefined> | undefined;
  const states = () =>
    (reading ??= read()
      // The database unreachable: the gauges keep their last values (the outage is reported elsewhere).
      .catch(() => undefined)
      .finally(() => setImmediate(() => (reading = undefined))));
  const gauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (g: Gauge<L>, s: DirectorySyncState) => void,
  ) =>
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      aggregator: 'max',
      async collect() {
        for (const s of (await states()) ?? []) fill(this, s);
      },
    });
  gauge(
    'latchkey_directory_sync_users',
    "The last directory sync pass's changes, by backend and outcome",
    ['backend', 'outcome'],
    (g, s) => {
      for (const outcome of ['created', 'updated', 'deprovisioned', 'reenabled'] as const)
        g.set({ backend: s.backend, outcome }, s[outcome]);
    },
  );
  gauge(
    'latchkey_directory_sync_last_success_timestamp_seconds',
    'When the last directory sync pass that applied started, by backend (none before the first)',
    ['backend'],
    (g, s) => {
      if (s.lastSuccessAt !== null) g.set({ backend: s.backend }, s.lastSuccessAt / 1000);
    },
  );
  gauge(
    'latchkey_directory_sync_refused',
    'Whether the last directory sync pass was refused because it would deprovision more than maxLeaverShare (1) or not (0), by backend',
    ['backend'],
    (g, s) => g.set({ backend: s.backend }, s.refused ? 1 : 0),
  );
}

/**
 * Each event sink's lag and backlog, read from the database at scrape time (one read for both). Every
 * worker of a cluster reads the same rows, so `max` keeps the values as they are. A sink that is gone
 * (a webhook deleted) loses its series; a database that does not answer leaves the last values.
 */
function eventSinkGauges(registry: Registry, read?: () => Promise<EventSinkLag[]>): void {
  if (!read) return;
  let reading: Promise<EventSinkLag[] | undefined> | undefined;
  const sinks = () =>
    (reading ??= read()
      .catch(() => undefined)
      .finally(() => setImmediate(() => (reading = undefined))));
  const gauge = (name: string, help: string, value: (s: EventSinkLag) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['sink'] as const,
      registers: [registry],
      aggregator: 'max',
      async collect() {
        const now = await sinks();
        if (!now) return;
        this.reset();
        for (const s of now) this.set({ sink: s.sink }, value(s));
      },
    });
  gauge(
    'latchkey_event_sink_lag_seconds',
    'How long ago the oldest audit event each sink (syslog, webhook:<id>) has still to deliver was recorded; 0 when it is caught up',
    (s) => s.lagSeconds,
  );
  gauge(
    'latchkey_event_sink_backlog',
    'The audit events each sink (syslog, webhook:<id>) has still to deliver, counted up to 10000',
    (s) => s.backlog,
  );
}

export type Metrics = ReturnType<typeof createMetrics>;
