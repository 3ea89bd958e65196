import { onCleanup } from './cleanup.ts';
import { freshDatabase } from './database.ts';
import { runDriver } from './drivers.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { form, FORM, json, postForm } from './http.ts';
import { addDirectoryUsers } from './directory-users.ts';
import { createClient, startLatchkey } from './latchkey.ts';
import { countedRun, expectJson, measureWithWrk, type BenchContext } from './measure.ts';
import type { Measurement } from './measurement.ts';
import { TOKEN_PATH, type TokenResponse } from './oauth-client.ts';
import { commandLine, resetPathPeak } from './processes.ts';
import { refreshChainScript, runWrk, writeScript } from './wrk.ts';
import type { PathResult } from './report.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../test/helpers/slapd.ts';

export interface LdapPhase {
  result: PathResult;
  /** The refresh grant of the same directory users, and the grant next to it (issue 37's goal). */
  refresh: PathResult;
  versusRefresh: PathResult;
  startMs: number;
  peakRssBytes: number;
  /** For `--only ldap`, whose report names them (bench/run.ts). */
  database: string;
  serverCommand: string;
}

/** The test suite's throwaway slapd (test/helpers/slapd.ts), its temp dirs inside the bench's. */
async function slapdInside(workDir: string): Promise<Slapd> {
  // The helper makes its data and TLS dirs with os.tmpdir(), which reads TMPDIR at each call: pointing
  // it at the work dir for this call puts them where the bench's cleanup removes them.
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = workDir;
  try {
    return await startSlapd();
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

/**
 * The password grant through the LDAP backend, next to the directory's own ceiling: a loop of plain
 * binds of the same user with the same client library at the same concurrency. A second Latchkey,
 * on its own fresh database, with the identity chain the LDAP tests use (the directory first, then
 * the database backend), so that the first server's password grant is not slowed by a directory.
 */
export async function ldapPhase(ctx: BenchContext): Promise<LdapPhase> {
  const { options: o } = ctx;
  ctx.log('LDAP: starting slapd and a Latchkey with the LDAP backend');
  const slapd = await slapdInside(ctx.workDir);
  // The helper's stop() waits for an 'exit' that never comes if slapd already died of the terminal's
  // SIGINT (it shares our process group): bound it.
  onCleanup('stop slapd', () => Promise.race([slapd.destroy(), new Promise<void>((r) => setTimeout(r, 5_000))]));

  const users = await addDirectoryUsers(slapd, ctx.workDir, o.connections);

  const database = await freshDatabase(o.database, ctx.workDir, 'ldap');
  const server = await startLatchkey({
    name: 'ldap',
    workDir: ctx.workDir,
    database,
    config: ldapChain(ldapBackendConfig(slapd, { poolSize: 8 })),
  });
  const client = await createClient(server, 'bench-ldap', { grants: ['password', 'refresh_token'] });

  ctx.log(`LDAP plain binds (ceiling): warm-up ${o.warmupSeconds} s, then ${o.seconds} s`);
  const bindInput = { url: slapd.url, users: users.map(({ dn, password }) => ({ dn, password })), concurrency: o.connections };
  await runDriver('ldap-binds', { ...bindInput, seconds: o.warmupSeconds });
  // The bind loop's server is slapd, whose CPU is not read: its rate is the directory's ceiling.
  const binds: Measurement = await countedRun(ctx, 'LDAP plain binds', undefined, () =>
    runDriver('ldap-binds', { ...bindInput, seconds: o.seconds }),
  );

  const grant = await measureWithWrk(ctx, 'LDAP password grant', {
    name: 'Latchkey (LDAP chain)',
    pid: server.serverPid,
    url: server.url + TOKEN_PATH,
    request: {
      method: 'POST',
      headers: { 'Content-Type': FORM },
      bodies: users.map((u) =>
        form({
          grant_type: 'password',
          client_id: client.clientId,
          client_secret: client.clientSecret,
          username: u.uid,
          password: u.password,
        }),
      ),
    },
    expect: expectJson((b) => typeof b.access_token === 'string', 'an access_token'),
  });
  const refresh = await directoryRefresh(ctx, server.url, server.serverPid, client, users);
  const peakRssBytes = server.peakRss();
  const serverCommand = commandLine(server.serverPid);
  await server.stop();
  await slapd.destroy();
  return {
    refresh,
    versusRefresh: {
      key: 'ldap_password_vs_refresh',
      label: 'LDAP password grant, next to the refresh grant of the same directory users',
      unit: 'req/s',
      method:
        'the two rows above, side by side: a sign-in through the directory should be no slower than a refresh, which reads the same entry and groups but binds nothing',
      latchkey: grant,
      peer: { name: 'refresh grant', measurement: refresh.latchkey },
    },
    result: {
      key: 'ldap_password',
      label: 'LDAP password grant (`/oauth/v20/token`)',
      unit: 'req/s',
      method: `wrk POSTs the password grants of ${users.length} directory users in turn (each shaped like the fixture's alice: two groups), to a second Latchkey whose identity chain is the LDAP backend then the database one; the peer is a closed loop of ldapts simple binds of the same users (one connection per worker, ${o.connections} workers) against the same throwaway slapd (test/helpers/slapd.ts)`,
      latchkey: grant,
      peer: { name: 'slapd plain binds', measurement: binds, unit: 'binds/s' },
    },
    startMs: server.startMs,
    peakRssBytes,
    database: database.description,
    serverCommand,
  };
}

/**
 * The refresh grant of the same directory users on the same server: it re-reads each user's entry and
 * groups in the directory (the account's state at each refresh) but binds nothing, so it is what a
 * sign-in through the directory costs without the password check. Driven as the main run's refresh
 * (bench/flows.ts): each connection spends the token each answer brings; the pools come from password
 * grants of the directory users.
 */
async function directoryRefresh(
  ctx: BenchContext,
  url: string,
  pid: number,
  client: { clientId: string; clientSecret: string },
  users: Array<{ uid: string; password: string }>,
): Promise<PathResult> {
  const { options: o } = ctx;
  const auth = { client_id: client.clientId, client_secret: client.clientSecret };
  const pool = async (name: string) => {
    const tokens: string[] = [];
    for (let i = 0; i < o.connections + 16; i++) {
      const u = users[i % users.length]!;
      const t = json<TokenResponse>(
        await postForm(url + TOKEN_PATH, { grant_type: 'password', username: u.uid, password: u.password, ...auth }),
        'LDAP password grant',
      );
      if (!t.refresh_token) throw new Error('the password grant of a client with refresh_token gave no refresh_token');
      tokens.push(t.refresh_token);
    }
    const file = join(ctx.workDir, `${name}.tokens`);
    writeFileSync(file, `${tokens.join('\n')}\n`);
    return file;
  };
  const warmup = await pool('ldap-refresh-warmup');
  const counted = await pool('ldap-refresh');
  const script = writeScript(
    ctx.workDir,
    'ldap-refresh',
    refreshChainScript(`${form({ grant_type: 'refresh_token', ...auth })}&refresh_token=`),
  );
  ctx.log(`refresh grant of the directory users: warm-up ${o.warmupSeconds} s, then ${o.seconds} s`);
  resetPathPeak(pid);
  await runWrk(url + TOKEN_PATH, script, o.warmupSeconds, o, [warmup]);
  const m = await countedRun(ctx, 'LDAP refresh grant', pid, () => runWrk(url + TOKEN_PATH, script, o.seconds, o, [counted]));
  return {
    key: 'ldap_refresh',
    label: 'refresh grant of a directory user (`/oauth/v20/token`)',
    unit: 'req/s',
    method: `wrk as the refresh row, on the LDAP-chain server: each connection starts from a refresh token of a pool minted by password grants of the ${users.length} directory users and spends the successor each answer brings; every refresh re-reads the user's entry and groups in slapd`,
    latchkey: m,
  };
}
