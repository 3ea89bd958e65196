import { scaleGoals } from './goals.ts';
import { errorShare, MAX_ERROR_SHARE, type Measurement } from './measurement.ts';
import type { BenchContext } from './measure.ts';
import { machine } from './report.ts';
import { ADMIN_CALLERS } from './scale-admin.ts';
import type { ScaleRun } from './scale.ts';

const num = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number | null) => (n === null ? '—' : n >= 100 ? `${Math.round(n)} ms` : `${n.toFixed(1)} ms`);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const valid = (m: Measurement) => errorShare(m) <= MAX_ERROR_SHARE;
const rate = (m: Measurement, unit: string) => `${num(m.rate)} ${unit}${valid(m) ? '' : ` (**${num(m.errors)} errors: not valid**)`}`;
const met = (ok: boolean) => (ok ? 'met' : '**missed**');

/** The scale run as a Markdown section: printed, and copied by hand into bench/README.md's history. */
export function renderScale(r: ScaleRun, ctx: BenchContext, warnings: string[], startedAt: Date, finishedAt: Date): string {
  const o = ctx.options;
  const c = r.counts;
  const disturbed = [...ctx.disturbed.keys()];
  if (disturbed.length > 0) warnings.push(`other load ran during these counted runs, whose figures are worthless: ${disturbed.join(', ')}`);
  const minutes = ((finishedAt.getTime() - startedAt.getTime()) / 60_000).toFixed(1);
  const perTable = Object.entries(r.fill.secondsByTable)
    .map(([t, s]) => `${t} ${s.toFixed(0)} s`)
    .join(', ');
  const g = scaleGoals;
  const paths = r.paths.map((p) => {
    const unit = p.key === 'code_flow' ? 'flows/s' : 'req/s';
    const ratio = p.filled.rate / p.empty.rate;
    return `| ${p.label} | ${rate(p.empty, unit)} | ${ms(p.empty.p99Ms)} | ${rate(p.filled, unit)} | ${ms(p.filled.p99Ms)} | ${ratio.toFixed(2)}× | ≥ ${g.minRatioToEmpty}×: ${met(ratio >= g.minRatioToEmpty && valid(p.filled))} |`;
  });
  const lists = r.lists.map(
    (l) =>
      `| ${l.label} | ${ms(l.empty.p99Ms)} | ${num(l.filled.rate)}/s | ${ms(l.filled.p99Ms)} | p99 ≤ ${g.adminListP99Ms} ms: ${met(l.filled.p99Ms !== null && l.filled.p99Ms <= g.adminListP99Ms && valid(l.filled))} |`,
  );
  const s = r.sync;
  const during = s.userinfo.latchkey;
  const quiet = s.userinfo.peer!.measurement;
  return [
    `## Scale, ${r.fill.database.description.startsWith('PostgreSQL') ? 'PostgreSQL' : 'SQLite'}: ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC (${o.quick ? 'quick run' : 'full run'}, ${minutes} min)`,
    '',
    `- machine: ${machine()}`,
    `- filled: ${num(c.users)} users, ${num(c.clients)} clients, ${num(c.userAccessTokens + c.clientAccessTokens)} live access tokens and ${num(c.refreshTokens)} live refresh tokens, ${num(c.auditEvents)} audit events${o.scale === 1 ? '' : ` (**${o.scale} of the enterprise size: a trial, not a figure**)`}`,
    `- fill: ${r.fill.fillSeconds.toFixed(0)} s (${perTable}), then the server started on it in ${(r.filledStartMs / 1000).toFixed(2)} s`,
    `- load: wrk -t${o.threads} -c${o.connections} -d${o.seconds}s after a ${o.warmupSeconds} s warm-up, the empty database's server and then the filled one's, path by path; lists: ${ADMIN_CALLERS} GraphQL callers at once`,
    `- peak RSS: ${mib(r.emptyPeakRssBytes)} on the empty database, ${mib(r.filledPeakRssBytes)} on the filled one`,
    ...warnings.map((w) => `- **warning**: ${w}`),
    '',
    '| Path | Empty database | p99 | Filled | p99 | Filled / empty | Goal (issue 37) |',
    '|---|---|---|---|---|---|---|',
    ...paths,
    '',
    '| Admin API list (GraphQL) | Empty: p99 | Filled: calls | Filled: p99 | Goal (issue 37) |',
    '|---|---|---|---|---|',
    ...lists,
    '',
    `Directory sync phase (its own fresh database, bench/directory-sync.ts): ${num(s.users)} users in ${num(s.groups)} groups, first pass ${(s.first.passMs / 1000).toFixed(1)} s, unchanged pass ${(s.steady.passMs / 1000).toFixed(1)} s; userinfo during the first pass ${num(during.rate)}/s (p99 ${ms(during.p99Ms)}) of ${num(quiet.rate)}/s before it.`,
  ].join('\n');
}
