/**
 * `npm run bench`: Latchkey's hot paths against the servers a Node shop would pick instead, measured
 * side by side in one run on this machine (bench/README.md). A benchmark, never a test.
 *
 *   npm run bench [-- --quick] [-- --postgres] [-- --only sync|tracing|ldap]
 *
 * What it does, in order:
 *   1. starts Latchkey as `npm start` would, on a fresh database, and seeds it through its interfaces
 *      (the operator CLI for clients, the GraphQL admin API for users, the endpoints for tokens);
 *   2. starts the peers, each its own process: oidc-provider, an Express hello, an argon2id verifier,
 *      and Glewlwyd (bench/glewlwyd.ts) when its Debian package is installed;
 *   3. drives each path with wrk (a Lua script chains the requests where one depends on the last;
 *      the LDAP peer's binds come from a Node driver), after an uncounted warm-up, Latchkey first,
 *      then its peer;
 *   4. reads the server's peak RSS, stops it, and measures client_credentials and userinfo with
 *      OpenTelemetry tracing on, spans sent to an OTLP receiver (bench/tracing.ts; `--only tracing`);
 *      then the LDAP password grant on a second Latchkey next to a plain-bind loop against a
 *      throwaway slapd (`--only ldap` runs that phase alone);
 *   5. times directory sync passes of 100,000 users in 5,000 groups on a third Latchkey, and userinfo
 *      during the first (bench/directory-sync.ts; `--only sync` runs that phase alone);
 *   6. prints the table and writes it to bench/RESULTS.md.
 * `--scale` runs bench/scale.ts instead: the hot paths and admin lists on an empty database and on one
 * filled to enterprise size, then the directory sync phase.
 * Whatever happens (a failure, Ctrl-C), every process it started and every temp database is removed.
 * Typecheck: npx tsc --noEmit -p bench (bench/ is outside the project's tsconfig, hence not in npm test).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanupAll, installSignalHandlers, interruptedBy, onCleanup } from './cleanup.ts';
import { freshDatabase } from './database.ts';
import { closeHttp } from './http.ts';
import { codeFlowPath, refreshPath } from './flows.ts';
import { hotPaths } from './hot-paths.ts';
import { startLatchkey } from './latchkey.ts';
import { directorySyncPhase, type DirectorySyncPhase } from './directory-sync.ts';
import { ldapPhase } from './ldap.ts';
import { tracingPhase } from './tracing.ts';
import { scalePhase } from './scale.ts';
import { renderScale } from './scale-report.ts';
import type { BenchContext } from './measure.ts';
import { parseOptions } from './options.ts';
import { startPeers } from './peers.ts';
import { commandLine, competingProcesses } from './processes.ts';
import { renderSection, writeResults, type RunReport } from './report.ts';
import { seed, signedInBrowsers } from './seed.ts';
import { assertWrkInstalled } from './wrk.ts';

async function bench(ctx: BenchContext, warnings: string[]): Promise<RunReport> {
  const { options: o } = ctx;
  const startedAt = new Date();
  const database = await freshDatabase(o.database, ctx.workDir, 'main');
  ctx.log(`starting Latchkey on ${database.description}`);
  const server = await startLatchkey({ name: 'main', workDir: ctx.workDir, database, config: {}, log: ctx.log });
  const serverCommand = commandLine(server.serverPid);
  ctx.log(`  /healthz answered 200 after ${Math.round(server.startMs)} ms (pid ${server.serverPid}: ${serverCommand})`);

  ctx.log('seeding (operator CLI, admin API), starting the peers, signing in the browsers');
  const seeded = await seed(server, o.connections);
  const peers = await startPeers(ctx.workDir, seeded.service, seeded.users[0]!);
  ctx.log(`  real peer: ${peers.glewlwydNote}`);
  const cookies = await signedInBrowsers(server, seeded);

  const paths = await hotPaths(ctx, server, peers, seeded);
  paths.push(await refreshPath(ctx, server, seeded, cookies[0]!));
  paths.push(await codeFlowPath(ctx, server, seeded, cookies));

  // VmHWM is the peak over the process's life: read after every path has run against it.
  const peakRssBytes = server.peakRss();
  await Promise.all([server.stop(), peers.stopAll()]);

  // What tracing costs, next to the untraced figures just measured (bench/tracing.ts).
  const untraced = (key: 'client_credentials' | 'userinfo') => paths.find((p) => p.key === key)!.latchkey;
  const tracing = await tracingPhase(ctx, { client_credentials: untraced('client_credentials'), userinfo: untraced('userinfo') });
  paths.push(...tracing.paths);

  const ldap = await ldapPhase(ctx);
  paths.push(ldap.result, ldap.refresh, ldap.versusRefresh);
  const sync = await directorySyncPhase(ctx);
  paths.push(sync.userinfo);
  return {
    options: o,
    database: database.description,
    paths,
    startMs: server.startMs,
    peakRssBytes,
    serverCommand,
    glewlwyd: peers.glewlwydNote,
    ldapStartMs: ldap.startMs,
    ldapPeakRssBytes: ldap.peakRssBytes,
    directorySync: syncFigures(sync),
    tracing: tracing.notes,
    warnings,
    startedAt,
    finishedAt: new Date(),
  };
}

const syncFigures = (sync: DirectorySyncPhase): RunReport['directorySync'] => ({
  users: sync.users,
  groups: sync.groups,
  readMs: sync.readMs,
  firstPassMs: sync.first.passMs,
  steadyPassMs: sync.steady.passMs,
  startMs: sync.startMs,
  peakRssBytes: sync.peakRssBytes,
});

/** `--only sync`: the directory sync phase alone (bench/directory-sync.ts). */
async function syncOnly(ctx: BenchContext, warnings: string[]): Promise<RunReport> {
  const startedAt = new Date();
  const sync = await directorySyncPhase(ctx);
  return {
    options: ctx.options,
    database: sync.database,
    paths: [sync.userinfo],
    startMs: sync.startMs,
    peakRssBytes: sync.peakRssBytes,
    serverCommand: sync.serverCommand,
    glewlwyd: 'not run (--only sync)',
    directorySync: syncFigures(sync),
    warnings,
    startedAt,
    finishedAt: new Date(),
  };
}

/** `--only tracing`: the tracing phase alone, its untraced side measured first (bench/tracing.ts). */
async function tracingOnly(ctx: BenchContext, warnings: string[]): Promise<RunReport> {
  const startedAt = new Date();
  const tracing = await tracingPhase(ctx);
  return {
    options: ctx.options,
    database: tracing.database,
    paths: tracing.paths,
    startMs: tracing.startMs,
    peakRssBytes: tracing.peakRssBytes,
    serverCommand: tracing.serverCommand,
    glewlwyd: 'not run (--only tracing)',
    tracing: tracing.notes,
    warnings,
    startedAt,
    finishedAt: new Date(),
  };
}

/** `--only ldap`: the directory's password and refresh grants and slapd's plain binds (bench/ldap.ts). */
async function ldapOnly(ctx: BenchContext, warnings: string[]): Promise<RunReport> {
  const startedAt = new Date();
  const ldap = await ldapPhase(ctx);
  return {
    options: ctx.options,
    database: ldap.database,
    paths: [ldap.result, ldap.refresh, ldap.versusRefresh],
    startMs: ldap.startMs,
    peakRssBytes: ldap.peakRssBytes,
    serverCommand: ldap.serverCommand,
    glewlwyd: 'not run (--only ldap)',
    warnings,
    startedAt,
    finishedAt: new Date(),
  };
}

const phaseAlone = { sync: syncOnly, tracing: tracingOnly, ldap: ldapOnly };

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  installSignalHandlers();
  const t0 = performance.now();
  const log = (message: string) => process.stderr.write(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(3)} s] ${message}\n`);
  const warnings: string[] = [];
  const competing = competingProcesses();
  if (competing.length > 0) {
    const w = `other load was running when the bench started (the figures are not worth much): ${competing.join('; ')}`;
    warnings.push(w);
    log(`warning: ${w}`);
  }
  assertWrkInstalled();
  const workDir = mkdtempSync(join(tmpdir(), 'latchkey-bench-'));
  // Registered first, so it runs last: after every process writing into it has stopped.
  onCleanup('remove the work dir', () => rmSync(workDir, { recursive: true, force: true }));
  try {
    const ctx: BenchContext = { options, workDir, log, disturbed: new Map() };
    if (options.scale !== undefined) {
      // `--scale` compares Latchkey with itself and reports on those terms (bench/scale-report.ts), printed only.
      const startedAt = new Date();
      const run = await scalePhase(ctx);
      process.stdout.write(`\n${renderScale(run, ctx, warnings, startedAt, new Date())}\n`);
      return;
    }
    const report = await (options.only ? phaseAlone[options.only] : bench)(ctx, warnings);
    if (ctx.disturbed.size > 0) {
      const what = new Set([...ctx.disturbed.values()].flatMap((s) => [...s]));
      report.warnings.push(
        `other load ran during these counted runs, whose figures are worthless: ${[...ctx.disturbed.keys()].join(', ')} (${[...what].join('; ')})`,
      );
    }
    // A section of bench/RESULTS.md is a whole run: one phase alone is printed only.
    const file = options.only ? undefined : writeResults(report);
    process.stdout.write(`\n${renderSection(report)}\n\n${file ? `written to ${file}` : 'not written to bench/RESULTS.md (one phase)'}\n`);
  } catch (err) {
    // Once interrupted, every step fails as its processes go: that is not worth a stack trace.
    if (interruptedBy()) return;
    log(`failed: ${(err as Error).stack ?? err}`);
    // The servers' own words (their logs are in the work dir, about to be removed).
    for (const file of readdirSync(workDir).filter((f) => f.endsWith('.log'))) {
      const tail = readFileSync(join(workDir, file), 'utf8').trim().split('\n').slice(-15).join('\n');
      if (tail) process.stderr.write(`--- ${file} (last lines) ---\n${tail}\n`);
    }
    process.exitCode = 1;
  } finally {
    await cleanupAll();
    closeHttp();
  }
}

await main();
