import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { goals, type Goal, type PathKey } from './goals.ts';
import { REPO } from './latchkey.ts';
import { errorShare, MAX_ERROR_SHARE, type Measurement } from './measurement.ts';
import type { BenchOptions } from './options.ts';

export interface PathResult {
  key: PathKey;
  label: string;
  unit: string;
  /** How the load was made, one line (for the notes under the table). */
  method: string;
  latchkey: Measurement;
  peer?: { name: string; measurement: Measurement; unit?: string };
  /** The same path against Glewlwyd, the real SSO server, when it ran. */
  glewlwyd?: Measurement;
  /** client_credentials against Glewlwyd with a client whose secret it compares as stored (no PBKDF2). */
  glewlwydPlainSecret?: Measurement;
}

export interface RunReport {
  options: BenchOptions;
  database: string;
  paths: PathResult[];
  startMs: number;
  peakRssBytes: number;
  /** The measured process, to show it was the server and not npm or a shell. */
  serverCommand: string;
  /** Glewlwyd's package version, or why it was skipped. */
  glewlwyd: string;
  ldapStartMs?: number;
  ldapPeakRssBytes?: number;
  /** The directory sync phase (bench/directory-sync.ts), in ms and bytes. */
  directorySync?: {
    users: number;
    groups: number;
    readMs: number;
    firstPassMs: number;
    steadyPassMs: number;
    startMs: number;
    peakRssBytes: number;
  };
  /** The tracing phase's account of its spans (bench/tracing.ts): what arrived, what was lost, the receiver's CPU. */
  tracing?: string[];
  warnings: string[];
  startedAt: Date;
  finishedAt: Date;
}

export function machine(): string {
  let model = cpus()[0]?.model ?? '?';
  try {
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? model;
  } catch {
    // not Linux: os.cpus() has it
  }
  return `${cpus().length} cores (${model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Linux ${release()}, Node ${process.version}`;
}

function revision(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
    // This file's own output is not a change to what was measured (a PostgreSQL run after an SQLite one).
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)bench/RESULTS.md'], {
      cwd: REPO,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${head} + uncommitted changes` : head;
  } catch {
    return '(not a git checkout)';
  }
}

const num = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number | null) => (n === null ? '—' : n >= 100 ? `${Math.round(n)} ms` : `${n.toFixed(1)} ms`);
/** The server's CPU during the run, in % of one core (this machine has cpus().length cores). */
const cpu = (m: Measurement) => (m.cpuPercent === undefined ? '—' : `${Math.round(m.cpuPercent)} %`);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

function rateCell(m: Measurement, unit: string): string {
  const flag = errorShare(m) > MAX_ERROR_SHARE ? ` (**${num(m.errors)} errors of ${num(m.requests)}: not valid**)` : '';
  return `${num(m.rate)} ${unit}${flag}`;
}

function goalCell(goal: Goal | undefined, result: PathResult): string {
  if (!goal) return '';
  const parts: string[] = [];
  let met = true;
  const ratio = result.peer ? result.latchkey.rate / result.peer.measurement.rate : undefined;
  if (goal.minRatio !== undefined) {
    parts.push(`≥ ${goal.minRatio}×`);
    met &&= ratio !== undefined && ratio >= goal.minRatio;
  }
  if (goal.minRate !== undefined) {
    parts.push(`≥ ${num(goal.minRate)} ${result.unit}`);
    met &&= result.latchkey.rate >= goal.minRate;
  }
  if (goal.maxP99Ms !== undefined) {
    parts.push(`p99 ≤ ${goal.maxP99Ms} ms`);
    met &&= result.latchkey.p99Ms !== null && result.latchkey.p99Ms <= goal.maxP99Ms;
  }
  met &&= errorShare(result.latchkey) <= MAX_ERROR_SHARE;
  return `${parts.join(', ')}: ${met ? 'met' : '**missed**'}`;
}

/** What the failed requests of a run answered, under the table. */
function errorNotes(paths: PathResult[]): string[] {
  const notes: string[] = [];
  for (const p of paths) {
    for (const [who, m] of [
      ['Latchkey', p.latchkey],
      [p.peer?.name, p.peer?.measurement],
      ['Glewlwyd', p.glewlwyd],
      ['Glewlwyd (plain secret)', p.glewlwydPlainSecret],
    ] as const) {
      if (m && m.errors > 0)
        notes.push(
          `- ${p.label}, ${who}: ${num(m.errors)} errors of ${num(m.requests)}: ${(m.firstError ?? 'no detail').replace(/\|/g, '\\|')}`,
        );
    }
  }
  return notes.length ? ['', 'Errors during the counted runs:', '', ...notes] : [];
}

const limitCell = (limit: number | undefined, value: number, show: (n: number) => string) =>
  limit === undefined ? '' : `≤ ${show(limit)}: ${value <= limit ? 'met' : '**missed**'}`;

/** Issue 26: at least ten times the real SSO server an operator would otherwise run, on every path. */
const REAL_PEER_RATIO = 10;

/** Latchkey against Glewlwyd, path by path: the comparison an operator cares about. */
function realPeerTable(r: RunReport): string[] {
  const rows = r.paths.filter((p) => p.glewlwyd);
  if (rows.length === 0) return ['', `Real SSO server: skipped (${r.glewlwyd}).`];
  return [
    '',
    `Against the real SSO server, same run: ${r.glewlwyd} (C, its own SQLite database; what each hashes and signs: bench/RESULTS.md)`,
    '',
    '| Path | Latchkey | Glewlwyd | Glewlwyd p99 | Glewlwyd CPU | Ratio | Goal (issue 26) |',
    '|---|---|---|---|---|---|---|',
    ...rows.flatMap((p) => {
      const row = (label: string, theirs: Measurement) => {
        const ratio = p.latchkey.rate / theirs.rate;
        const valid = errorShare(p.latchkey) <= MAX_ERROR_SHARE && errorShare(theirs) <= MAX_ERROR_SHARE;
        return `| ${label} | ${rateCell(p.latchkey, p.unit)} | ${rateCell(theirs, p.unit)} | ${ms(theirs.p99Ms)} | ${cpu(theirs)} | ${ratio.toFixed(1)}× | ≥ ${REAL_PEER_RATIO}×: ${valid && ratio >= REAL_PEER_RATIO ? 'met' : '**missed**'} |`;
      };
      return [
        row(p.key === 'client_credentials' ? `${p.label} (Glewlwyd: client password, PBKDF2)` : p.label, p.glewlwyd!),
        ...(p.glewlwydPlainSecret ? [row(`${p.label} (Glewlwyd: \`client_secret\` compared as stored)`, p.glewlwydPlainSecret)] : []),
      ];
    }),
  ];
}

/** Which path took memory where: the server's peak RSS during each path, its warm-up included. */
function pathPeaks(r: RunReport): string[] {
  const peaks = r.paths.filter((p) => p.latchkey.peakRssBytes !== undefined).map((p) => `${p.key} ${mib(p.latchkey.peakRssBytes!)}`);
  return peaks.length ? ['', `Latchkey's peak RSS during each path (VmHWM reset before its warm-up): ${peaks.join(', ')}.`] : [];
}

/** The figures as a Markdown section (also what is printed). */
export function renderSection(r: RunReport): string {
  const g = goals[r.options.database];
  const rows = r.paths.map((p) => {
    const peer = p.peer?.measurement;
    const ratio = peer ? `${(p.latchkey.rate / peer.rate).toFixed(2)}×` : '—';
    return `| ${p.label} | ${rateCell(p.latchkey, p.unit)} | ${ms(p.latchkey.p99Ms)} | ${cpu(p.latchkey)} | ${p.peer ? `${p.peer.name}: ${rateCell(peer!, p.peer.unit ?? p.unit)}` : '—'} | ${peer ? ms(peer.p99Ms) : '—'} | ${peer ? cpu(peer) : '—'} | ${ratio} | ${goalCell(g[p.key], p)} |`;
  });
  const s = (n: number) => `${(n / 1000).toFixed(2)} s`;
  // A run of one phase (`--only`) started no main server.
  if (!r.options.only) {
    rows.push(
      `| start: spawn to the first 200 from /healthz (fresh database) | ${s(r.startMs)} | | | | | | | ${limitCell(g.startMs, r.startMs, s)} |`,
    );
    rows.push(
      `| peak RSS (VmHWM) of the server after all the runs above | ${mib(r.peakRssBytes)} | | | | | | | ${limitCell(g.peakRssBytes, r.peakRssBytes, mib)} |`,
    );
  }
  if (r.ldapStartMs !== undefined && r.ldapPeakRssBytes !== undefined) {
    rows.push(`| the LDAP-chain server: start; peak RSS | ${s(r.ldapStartMs)}; ${mib(r.ldapPeakRssBytes)} | | | | | | | |`);
  }
  if (r.directorySync) {
    const d = r.directorySync;
    const what = `directory sync of ${num(d.users)} users in ${num(d.groups)} groups`;
    rows.push(
      `| ${what}: the first pass (every user new) | ${s(d.firstPassMs)} | | | | | | | ${limitCell(g.directorySyncMs, d.firstPassMs, s)} |`,
    );
    rows.push(
      `| ${what}: a pass with nothing changed | ${s(d.steadyPassMs)} | | | | | | | ${limitCell(g.directorySyncMs, d.steadyPassMs, s)} |`,
    );
    rows.push(`| ${what}: reading the directory alone (the LDAP backend's listing) | ${s(d.readMs)} | | | | | | | |`);
    rows.push(`| the directory-sync server: start; peak RSS | ${s(d.startMs)}; ${mib(d.peakRssBytes)} | | | | | | | |`);
  }
  const o = r.options;
  const minutes = ((r.finishedAt.getTime() - r.startedAt.getTime()) / 60_000).toFixed(1);
  return [
    `## ${r.database.startsWith('PostgreSQL') ? 'PostgreSQL' : 'SQLite'}: ${r.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC (${o.quick ? 'quick run' : 'full run'}, ${minutes} min)`,
    '',
    `- machine: ${machine()}`,
    `- database: ${r.database}`,
    `- Latchkey: ${revision()}, started as \`npm start\` runs it; measured process: \`${r.serverCommand}\``,
    '- CPU: what the measured server process used during the counted run, in % of one core',
    `- load: wrk -t${o.threads} -c${o.connections} -d${o.seconds}s after an uncounted ${o.warmupSeconds} s warm-up; Node drivers: ${o.connections} concurrent workers, same durations`,
    ...r.warnings.map((w) => `- **warning**: ${w}`),
    '',
    '| Path | Latchkey | p99 | CPU | Peer (same run) | Peer p99 | Peer CPU | Ratio | Goal (issues 11, 37) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    ...pathPeaks(r),
    ...(r.tracing ? ['', ...r.tracing] : []),
    ...realPeerTable(r),
    ...errorNotes(r.paths),
    '',
    'How each path is driven:',
    '',
    ...r.paths.map((p) => `- ${p.label}: ${p.method}`),
  ].join('\n');
}

const RESULTS = join(REPO, 'bench', 'RESULTS.md');

const HEADER = `# Benchmark results

Written by \`npm run bench\` (bench/run.ts); each run replaces the section of its database and keeps
the other one. Reproduce on an otherwise idle machine (no test run at the same time):

\`\`\`sh
DEBIAN_FRONTEND=noninteractive apt-get install -y wrk slapd ldap-utils   # wrk drives the load; slapd: the throwaway directory
DEBIAN_FRONTEND=noninteractive apt-get install -y glewlwyd              # optional: the real SSO server peer (skipped, and said so, without it)
npm ci
npm run bench                 # SQLite, about 10 minutes
npm run bench -- --postgres   # a fresh database on PostgreSQL at 127.0.0.1:5432 (BENCH_POSTGRES_URL)
npm run bench -- --quick      # about 2 minutes, shorter runs: a first look, noisier figures
\`\`\`

Ratios compare Latchkey with its peer measured in the same run on the same machine; absolute figures
from different machines or runs do not compare.

What each server does per request, and how like is compared with like:

- **Latchkey**: a client secret is 256 random bits, stored and checked as its SHA-256 (nothing to
  brute-force); access and refresh tokens are opaque (256 random bits, stored as SHA-256); an id_token
  is RS256 (WebCrypto); user passwords are argon2id (19 MiB, t=2, p=1). Every token is a row in the
  database, committed before the answer leaves.
- **Glewlwyd 2.7** (C; bench/glewlwyd.ts: its own SQLite database from the package's init script, an
  OIDC plugin instance, a client and a user made through its admin REST API): client and user
  passwords stored as PBKDF2 with 150,000 iterations (its database modules' default) and checked on
  every grant (\`client_credentials\` is measured twice: with that client password, and with a client
  whose \`client_secret\` property Glewlwyd keeps as given and compares without PBKDF2, the cheap check
  Latchkey's SHA-256 of a random secret is); access tokens and id_tokens are JWTs, configured HS256 (\`jwt-type: sha\`), its cheapest
  signature, so that it signs no RSA per token where Latchkey signs none; its tokens are rows in its
  database too. Compared on \`client_credentials\` (same client id and secret, \`client_secret_post\`),
  userinfo (a bearer token of the password grant; Glewlwyd answers \`sub\` only, Latchkey the profile
  and email claims) and the password grant (the same user name and password on one account). The
  PBKDF2 row is Glewlwyd as its admin console sets a client up; the plain-secret row is the like-for-like
  one for the secret check. The argon2id verifier
  is the like-for-like peer of the password grant: the same hash of the same parameters.
- **oidc-provider**: tokens in memory (its in-memory adapter), client secret compared in plain; the
  ceiling of a Node OAuth server that writes nothing.
`;

const marker = (kind: string, end = false) => `<!-- ${end ? '/' : ''}bench:${kind} -->`;

/** Rewrites bench/RESULTS.md: the fixed header, then one section per database, this run's replaced. */
export function writeResults(r: RunReport): string {
  const kinds = ['sqlite', 'postgres'] as const;
  const previous = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '';
  const sections = kinds.map((kind) => {
    if (kind === r.options.database) return `${marker(kind)}\n${renderSection(r)}\n${marker(kind, true)}`;
    const start = previous.indexOf(marker(kind));
    const end = previous.indexOf(marker(kind, true));
    return start >= 0 && end > start ? previous.slice(start, end + marker(kind, true).length) : '';
  });
  writeFileSync(RESULTS, `${HEADER}\n${sections.filter(Boolean).join('\n\n')}\n`);
  return RESULTS;
}
