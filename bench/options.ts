import { parseArgs } from 'node:util';

export type DatabaseKind = 'sqlite' | 'postgres';

/** The phases that run alone with `--only`. */
const PHASES = ['sync', 'tracing', 'ldap'] as const;
type Phase = (typeof PHASES)[number];

export interface BenchOptions {
  database: DatabaseKind;
  quick: boolean;
  /** Seconds of each counted run. */
  seconds: number;
  /** Seconds of the uncounted run before it: JIT, connection pools and caches get warm. */
  warmupSeconds: number;
  /** wrk -t: one thread leaves the other core to the server. */
  threads: number;
  /** wrk -c, and the concurrency of the Node drivers: the contract's figures are at 32. */
  connections: number;
  /** `--only sync` or `--only tracing`: that phase alone, printed and not written to bench/RESULTS.md. */
  only?: Phase;
  /**
   * `--scale`: the hot paths and admin lists on an empty database and on one filled to enterprise size
   * (bench/scale.ts), as a fraction of that size (1; `--scale-fraction` for a trial of the bench).
   */
  scale?: number;
}

const usage = `usage: npm run bench [-- --quick] [-- --postgres] [-- --only sync|tracing|ldap] [-- --scale]

  --quick      short runs (about two minutes in all) for a first look; the full run takes about ten
  --postgres   Latchkey on a fresh PostgreSQL database (CREATE DATABASE on BENCH_POSTGRES_URL, default
               postgres://postgres@127.0.0.1:5432/test) instead of a fresh SQLite file
  --only sync  the directory sync phase alone (100,000 users in 5,000 groups); printed, not written
               to bench/RESULTS.md, whose sections are whole runs
  --only tracing
               client_credentials and userinfo untraced, then with OpenTelemetry tracing on (every
               request, and 10 % of them), spans sent to an OTLP receiver on loopback; printed only
  --only ldap  the LDAP password grant, the refresh grant of the same directory users and slapd's
               plain binds, on a Latchkey of their own; printed only
  --scale      the hot paths and the admin API's lists on an empty database and on one filled with
               1,000,000 users, 100,000 clients, 10,000,000 live tokens and 1,000,000 audit events,
               then the directory sync phase; printed only (bench/README.md, "--scale")
  --scale-fraction F
               --scale at F times that size (0 < F ≤ 1): a trial of the bench, not a figure

Prints the figures and writes them to bench/RESULTS.md. Run it on an otherwise idle machine.`;

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      postgres: { type: 'boolean', default: false },
      only: { type: 'string' },
      scale: { type: 'boolean', default: false },
      'scale-fraction': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const only = values.only as Phase | undefined;
  if (only !== undefined && !PHASES.includes(only)) {
    process.stderr.write(`--only: the phases that run alone are ${PHASES.join(' and ')}, not "${values.only}"\n${usage}\n`);
    process.exit(2);
  }
  const fraction = values['scale-fraction'] === undefined ? 1 : Number(values['scale-fraction']);
  if (!(fraction > 0 && fraction <= 1)) {
    process.stderr.write(`--scale-fraction: a number above 0 and at most 1, not "${values['scale-fraction']}"\n${usage}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  // 14 counted runs (one per path and peer); quick: 14 × 7 s ≈ 100 s plus set-up; full: 14 × 35 s ≈ 8 min.
  const quick = values.quick;
  return {
    database: values.postgres ? 'postgres' : 'sqlite',
    quick,
    seconds: quick ? 5 : 30,
    warmupSeconds: quick ? 2 : 5,
    threads: 1,
    connections: 32,
    ...(only ? { only } : {}),
    ...(values.scale || values['scale-fraction'] !== undefined ? { scale: fraction } : {}),
  };
}
