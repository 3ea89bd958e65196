import { parseArgs } from 'node:util';

export type DatabaseKind = 'sqlite' | 'postgres';

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
  /** `--only sync`: that phase alone, printed and not written to bench/RESULTS.md. */
  only?: 'sync';
}

const usage = `usage: npm run bench [-- --quick] [-- --postgres] [-- --only sync]

  --quick      short runs (about two minutes in all) for a first look; the full run takes about ten
  --postgres   Latchkey on a fresh PostgreSQL database (CREATE DATABASE on BENCH_POSTGRES_URL, default
               postgres://postgres@127.0.0.1:5432/test) instead of a fresh SQLite file
  --only sync  the directory sync phase alone (100,000 users in 5,000 groups); printed, not written
               to bench/RESULTS.md, whose sections are whole runs

Prints the figures and writes them to bench/RESULTS.md. Run it on an otherwise idle machine.`;

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      postgres: { type: 'boolean', default: false },
      only: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.only !== undefined && values.only !== 'sync') {
    process.stderr.write(`--only: the one phase that runs alone is "sync", not "${values.only}"\n${usage}\n`);
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
    ...(values.only === 'sync' ? { only: 'sync' as const } : {}),
  };
}
