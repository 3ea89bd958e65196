/**
 * `npm run bench:purge [-- --postgres] [-- --rows N]`: the retention purge of a large backlog while
 * `/me` is under load (issue 12, docs/operating-latchkey.md: the purge never stalls requests). A benchmark, not a test.
 *
 *   1. starts Latchkey as `npm start` would on a fresh database, makes a client, a user and a token,
 *      and stops it;
 *   2. writes N dead rows (default 1,000,000: expired codes, tokens and sessions, spent throttle rows,
 *      audit events past their 90 days), as a deployment that never purged would hold;
 *   3. starts Latchkey again, `retention.interval` 30 s, and drives `/me` with wrk (1 thread, 32
 *      connections, as `npm run bench`): a quiet window before the first purge round, then windows
 *      from that round on until it has deleted every dead row;
 *   4. prints /me's rate and p99 quiet and during the purge, and how long the purge took.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { cleanupAll, installSignalHandlers, onCleanup } from './cleanup.ts';
import { freshDatabase } from './database.ts';
import { json, postForm } from './http.ts';
import { createClient, latchkeyCli, startLatchkey } from './latchkey.ts';
import type { Measurement } from './measurement.ts';
import { assertWrkInstalled, requestScript, runWrk, writeScript } from './wrk.ts';
import { seedDeadRows } from '../test/helpers/expired-rows.ts';

const args = process.argv.slice(2);
const kind = args.includes('--postgres') ? 'postgres' : 'sqlite';
const rows = Number(args[args.indexOf('--rows') + 1] ?? NaN) || 1_000_000;
const WRK = { threads: 1, connections: 32 };
const WINDOW_S = 10;

const log = (m: string) => process.stdout.write(`${m}\n`);
const ms = (m: Measurement) => `${Math.round(m.rate)} req/s, p99 ${m.p99Ms?.toFixed(1)} ms${m.errors ? `, ${m.errors} errors` : ''}`;

async function openDatabase(url: string): Promise<Knex> {
  const db = url.startsWith('sqlite:')
    ? knexFactory({ client: 'better-sqlite3', connection: { filename: url.slice('sqlite:'.length) }, useNullAsDefault: true })
    : knexFactory({ client: 'pg', connection: url });
  return db;
}

async function purgedSoFar(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^latchkey_purged_rows_total\{table="\w+"\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

async function main(): Promise<void> {
  assertWrkInstalled();
  installSignalHandlers();
  const workDir = mkdtempSync(join(tmpdir(), 'latchkey-bench-purge-'));
  onCleanup('remove the work dir', () => rmSync(workDir, { recursive: true, force: true }));
  const database = await freshDatabase(kind, workDir, 'purge');
  log(`Latchkey on ${database.description}; ${rows.toLocaleString('en')} rows to purge`);
  const interval = 30;
  const first = await startLatchkey({ name: 'setup', workDir, database, config: {}, log });
  const client = await createClient(first, 'purge-bench', { grants: ['password'] });
  const user = await latchkeyCli<{ id: string }>(first, [
    'user',
    'create',
    '--username',
    'bench-user',
    '--password',
    'bench-user-password-1',
  ]);
  const token = json<{ access_token: string }>(
    await postForm(`${first.url}/oauth/v20/token`, {
      grant_type: 'password',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      username: 'bench-user',
      password: 'bench-user-password-1',
    }),
    'password grant',
  ).access_token;
  await first.stop();

  const db = await openDatabase(database.url);
  let t = performance.now();
  await seedDeadRows(db, rows, { clientId: client.clientId, userId: user.id, expiredAt: Date.now() - 60_000, chunk: 1000 });
  await db.destroy();
  log(`seeded in ${((performance.now() - t) / 1000).toFixed(0)} s`);

  const server = await startLatchkey({ name: 'purge', workDir, database, config: { retention: { interval } }, log });
  onCleanup('stop latchkey', () => server.stop());
  const firstRound = Date.now() + interval * 1000;
  const script = writeScript(workDir, 'me.lua', requestScript({ method: 'GET', headers: { authorization: `Bearer ${token}` } }));
  const me = `${server.url}/api/oauth/v20/me`;
  await runWrk(me, script, 5, WRK); // warm-up
  const quiet = await runWrk(me, script, WINDOW_S, WRK);
  log(`/me quiet:          ${ms(quiet)}`);
  if ((await purgedSoFar(server.url)) > 0 || Date.now() > firstRound) throw new Error('the quiet window overlapped the first purge round');
  while (Date.now() < firstRound) await new Promise((r) => setTimeout(r, 50));

  t = performance.now();
  const windows: Measurement[] = [];
  let purged = 0;
  while (purged < rows) {
    const w = await runWrk(me, script, WINDOW_S, WRK);
    windows.push(w);
    purged = await purgedSoFar(server.url);
    log(`/me while purging:  ${ms(w)}  (${purged.toLocaleString('en')} rows purged so far)`);
    if (windows.length > 120) throw new Error('the purge did not finish within 20 minutes');
  }
  const seconds = (performance.now() - t) / 1000;
  const worstP99 = Math.max(...windows.map((w) => w.p99Ms ?? 0));
  const rate = windows.reduce((n, w) => n + w.rate * w.seconds, 0) / windows.reduce((n, w) => n + w.seconds, 0);
  log('');
  log(
    `${rows.toLocaleString('en')} rows purged in at most ${seconds.toFixed(0)} s (${WINDOW_S} s windows) on ${database.description}, ${new Date().toISOString()}`,
  );
  log(
    `/me quiet: ${Math.round(quiet.rate)} req/s, p99 ${quiet.p99Ms?.toFixed(1)} ms; while purging: ${Math.round(rate)} req/s, worst window p99 ${worstP99.toFixed(1)} ms (${(worstP99 / (quiet.p99Ms ?? 1)).toFixed(2)}× quiet)`,
  );
}

main()
  .catch((err: Error) => {
    process.stderr.write(`bench:purge failed: ${err.stack ?? err.message}\n`);
    process.exitCode = 1;
  })
  .finally(() => cleanupAll());
