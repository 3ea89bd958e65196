import pino from 'pino';
import plugin from '../plugins/ldap/index.ts';
import { people } from '../test/fixtures/ldap/directory.ts';
import { ldapBackendConfig, ldapChain } from '../test/helpers/slapd.ts';
import { adminToken } from './admin-api.ts';
import { onCleanup } from './cleanup.ts';
import { freshDatabase } from './database.ts';
import { json, request } from './http.ts';
import { startLargeDirectory } from './large-directory.ts';
import { createClient, startLatchkey, type Latchkey } from './latchkey.ts';
import { countedRun, expectJson, measureWithWrk, probe, type BenchContext, type WrkTarget } from './measure.ts';
import type { Measurement } from './measurement.ts';
import { passwordGrant } from './oauth-client.ts';
import { commandLine, spawnTracked } from './processes.ts';
import type { PathResult } from './report.ts';
import { SCOPES } from './seed.ts';
import { parseWrk, requestScript, writeScript } from './wrk.ts';

/** SPEC's figure: 100,000 directory users in 5,000 groups sync in under 60 s on 2 cores. */
export const SYNC_USERS = 100_000;
export const SYNC_GROUPS = 5_000;

export interface SyncPass {
  /** The pass as the service timed it (`SyncResult.durationMs`): what the duration metric shows. */
  passMs: number;
  /** From the mutation sent to its answer. */
  wallMs: number;
  created: number;
  updated: number;
}

export interface DirectorySyncPhase {
  users: number;
  groups: number;
  /** The LDAP backend's `listUsers()` alone, in the bench process: the read's share of a pass. */
  readMs: number;
  /** Every user new: 100,000 records created. */
  first: SyncPass;
  /** Nothing changed in the directory: every user compared, none written. */
  steady: SyncPass;
  /** userinfo quiet, then during the first pass. */
  userinfo: PathResult;
  /** userinfo during the pass with nothing changed (printed; the report's path is the first pass's). */
  userinfoSteady: Measurement;
  /** The sync server's start, its peak RSS over the phase (the passes hold the directory in memory), and what it ran. */
  startMs: number;
  peakRssBytes: number;
  serverCommand: string;
  /** The sync server's database, as the report names it. */
  database: string;
}

const BACKEND = 'corp';
const EXTRA = ['employeeNumber', 'departmentNumber'];

/**
 * The directory sync of docs/directory-sync.md at the size the goal names: a throwaway slapd with
 * 100,000 users in 5,000 groups (bench/large-directory.ts), a Latchkey with it as its LDAP backend, and
 * `syncBackend` passes through the GraphQL admin API (the same `directorySync.run` as `latchkey sync
 * corp`, run where a scheduled pass runs: in the server), while wrk drives userinfo with a directory
 * user's token.
 */
export async function directorySyncPhase(ctx: BenchContext): Promise<DirectorySyncPhase> {
  const { options: o } = ctx;
  ctx.log(
    `directory sync: ${SYNC_USERS.toLocaleString('en-US')} users in ${SYNC_GROUPS.toLocaleString('en-US')} groups into a throwaway slapd`,
  );
  const dir = await startLargeDirectory(ctx.workDir, SYNC_USERS, SYNC_GROUPS);
  onCleanup('stop the large slapd', () => Promise.race([dir.slapd.destroy(), new Promise<void>((r) => setTimeout(r, 5_000))]));
  ctx.log(`  slapadd loaded it in ${dir.loadSeconds.toFixed(1)} s`);
  const config = ldapBackendConfig(dir.slapd, { poolSize: 8, extraAttributes: EXTRA, sync: { interval: 0 } });

  const readMs = await timeRead(config);
  ctx.log(`  the LDAP listing alone (listUsers): ${(readMs / 1000).toFixed(2)} s`);

  const database = await freshDatabase(o.database, ctx.workDir, 'sync');
  const server = await startLatchkey({ name: 'sync', workDir: ctx.workDir, database, config: ldapChain(config) });
  const app = await createClient(server, 'bench-sync', { grants: ['password'], scopes: SCOPES });
  const { access_token } = await passwordGrant(server.url, app, 'alice', people.alice.password, SCOPES.join(' '));
  const target: WrkTarget = {
    name: 'Latchkey (LDAP chain)',
    pid: server.serverPid,
    url: `${server.url}/connect/v10/userinfo`,
    request: { method: 'GET', headers: { Authorization: `Bearer ${access_token}` } },
    expect: expectJson((b) => b.preferred_username === 'alice', "alice's claims"),
  };
  const quiet = await measureWithWrk(ctx, 'userinfo before the sync', target);

  const admin = await adminToken(server);
  ctx.log('  first pass (every user new), userinfo driven during it');
  let first: SyncPass | undefined;
  const during = await countedRun(ctx, 'userinfo during the first sync pass', server.serverPid, () =>
    wrkWhile(ctx, target, async () => {
      first = await syncPass(server, admin);
    }),
  );
  ctx.log(`  first pass: ${(first!.passMs / 1000).toFixed(1)} s, ${first!.created} created`);
  ctx.log('  a pass with nothing changed, userinfo driven during it');
  let steady: SyncPass | undefined;
  const duringSteady = await countedRun(ctx, 'userinfo during the unchanged sync pass', server.serverPid, () =>
    wrkWhile(ctx, target, async () => {
      steady = await syncPass(server, admin);
    }),
  );
  ctx.log(`  a pass with nothing changed: ${(steady!.passMs / 1000).toFixed(1)} s, ${steady!.updated} updated`);

  const peakRssBytes = server.peakRss();
  const serverCommand = commandLine(server.serverPid);
  await server.stop();
  await dir.slapd.destroy();
  return {
    startMs: server.startMs,
    peakRssBytes,
    serverCommand,
    database: database.description,
    users: SYNC_USERS,
    groups: SYNC_GROUPS,
    readMs,
    first: first!,
    steady: steady!,
    userinfoSteady: duringSteady,
    userinfo: {
      key: 'userinfo_during_sync',
      label: '`/connect/v10/userinfo` during a directory sync pass',
      unit: 'req/s',
      method: `wrk GETs userinfo with a directory user's token while the server runs its first directory sync pass of ${SYNC_USERS.toLocaleString('en-US')} users in ${SYNC_GROUPS.toLocaleString('en-US')} groups (GraphQL \`syncBackend\`, bench/directory-sync.ts); the peer is the same server just before the pass`,
      latchkey: during,
      peer: { name: 'the same server before the pass', measurement: quiet },
    },
  };
}

/** `listUsers()` of the LDAP backend, in this process, every batch taken and dropped. */
async function timeRead(config: Record<string, unknown>): Promise<number> {
  const backend = await plugin.create(plugin.configSchema.parse(config), {
    id: BACKEND,
    logger: pino({ level: 'warn' }),
    db: undefined as never,
    localUsers: undefined as never,
  });
  try {
    const t0 = performance.now();
    let users = 0;
    for await (const batch of backend.sync!.listUsers()) users += batch.length;
    if (users < SYNC_USERS) throw new Error(`the listing gave ${users} users, fewer than ${SYNC_USERS}`);
    return performance.now() - t0;
  } finally {
    await backend.close?.();
  }
}

/**
 * One pass through GraphQL `syncBackend`. The bench's `graphql()` gives up after 10 s; a pass may
 * take a minute.
 */
async function syncPass(server: Latchkey, token: string): Promise<SyncPass> {
  const t0 = performance.now();
  const res = await request(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({
      query: 'mutation($id: String!) { syncBackend(id: $id) { outcome users created updated durationMs error } }',
      variables: { id: BACKEND },
    }),
    timeoutMs: 600_000,
  });
  const wallMs = performance.now() - t0;
  const body = json<{
    data?: { syncBackend: { outcome: string; users: number; created: number; updated: number; durationMs: number; error: string | null } };
    errors?: unknown[];
  }>(res, 'syncBackend');
  const r = body.data?.syncBackend;
  if (!r || body.errors?.length) throw new Error(`syncBackend: ${JSON.stringify(body.errors ?? body)}`);
  if (r.outcome !== 'APPLIED' || r.users < SYNC_USERS) throw new Error(`syncBackend: ${r.outcome} with ${r.users} users: ${r.error}`);
  return { passMs: r.durationMs, wallMs, created: r.created, updated: r.updated };
}

/** wrk against `target` for as long as `work` runs: started before it, stopped (SIGINT: wrk then reports) after. */
async function wrkWhile(ctx: BenchContext, target: WrkTarget, work: () => Promise<void>): Promise<Measurement> {
  const { options: o } = ctx;
  await probe(target, 'userinfo during the sync');
  const script = writeScript(ctx.workDir, 'userinfo-during-sync', requestScript(target.request));
  const args = [`-t${o.threads}`, `-c${o.connections}`, '-d600s', '--latency', '--timeout', '10s', '-s', script, target.url];
  const wrk = spawnTracked('wrk', 'wrk', args, { capture: true });
  const t0 = performance.now();
  try {
    await work();
  } finally {
    process.kill(wrk.pid, 'SIGINT');
    await wrk.exited;
    await wrk.stop();
  }
  return parseWrk(wrk.output(), (performance.now() - t0) / 1000);
}
