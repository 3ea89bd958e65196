import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { request } from 'node:http';
import { family, freshGet, freshGraphql, freshPost, sampleValue, scrape, spawnCluster, type LatchkeyCluster } from '../helpers/cluster.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, obtainCode } from '../helpers/flow.ts';
import { basic, type Fields } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { answer as throttleAnswer, expectRefused, expectThrottled, sleep, tally } from '../helpers/throttle.ts';

/**
 * Cluster mode (docs/operating-latchkey.md, issue 12): `WORKERS=2` runs two worker processes on one port, and every
 * guarantee of the contract holds across them as it does across hosts on one PostgreSQL: single-use
 * codes, refresh reuse detection, revocation and administrators' changes seen at once by every worker,
 * the brute-force policy counted across workers, `/metrics` totals over every worker; a worker that dies
 * is replaced; SIGTERM to the primary stops everything gracefully with exit code 0. One cluster per
 * database, started as `npm start` starts it, on fixtures made by an in-process server on the same
 * database; the kill and SIGTERM tests come last and end it.
 *
 * How requests reach both workers: Node's cluster primary accepts each connection and hands it to the
 * workers in turn (round robin), and every request here opens a connection of its own
 * (`Connection: close`). So SPREAD requests sent one after another alternate between the two workers,
 * half of them each; concurrent requests are spread the same way over whichever worker is free. The
 * SIGTERM test sees it happen: it looks up which worker holds each of its requests in flight.
 */

/** Requests sent one after another for each "every worker" check: four per worker. */
const SPREAD = 8;
/** Requests racing for one code or one refresh token. */
const CONCURRENCY = 10;
/** Races per access token format. */
const ROUNDS = 3;
const METRICS_TOKEN = 'metrics-token-for-cluster-tests';

type Format = 'opaque' | 'jwt';
const formats: Format[] = ['opaque', 'jwt'];
type App = { clientId: string; clientSecret: string | null };

interface Answer {
  status: number;
  body: { access_token?: string; refresh_token?: string; error?: string; error_description?: string };
}
const answer = async (res: Response): Promise<Answer> => ({ status: res.status, body: (await res.json()) as Answer['body'] });

/** `times` requests one after another, each on its own connection: they alternate between the workers. */
async function inTurn<T>(times: number, send: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < times; i++) out.push(await send(i));
  return out;
}

const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * A form POST whose headers and first half of the body go out now and the rest only on `finish()`: a
 * request the server is in the middle of when something happens to it.
 */
function requestInFlight(url: string, path: string, fields: Record<string, string>, headers: Record<string, string>) {
  const body = new URLSearchParams(fields).toString();
  const { hostname, port } = new URL(url);
  const req = request({
    host: hostname,
    port,
    method: 'POST',
    path,
    agent: false,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
      ...headers,
    },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      res.on('error', reject);
    });
  });
  const half = Math.floor(body.length / 2);
  req.write(body.slice(0, half));
  return { finish: () => req.end(body.slice(half)), response };
}

describe.each(databaseKinds)('cluster mode with two workers on %s', (kind) => {
  let server: TestServer;
  let cluster: LatchkeyCluster;
  let adminToken: string;
  const codeApps = {} as Record<Format, App & { redirectUri: string }>;
  const passwordApps = {} as Record<Format, App>;
  /** A client_credentials client whose secret the rotation test changes. */
  let service: App;
  /** A client_credentials client for the kill and SIGTERM tests. */
  let probe: App;
  const userIds: Record<string, string> = {};
  const password = (name: string) => `${name}-password-1`;

  beforeAll(async () => {
    server = await startTestServer(kind);
    for (const name of ['alice', 'bob', 'carol', 'dave']) userIds[name] = await server.user(name, password(name));
    for (const format of formats) {
      codeApps[format] = await server.client({ grantTypes: ['authorization_code', 'refresh_token'], accessTokenFormat: format });
      passwordApps[format] = await server.client({ grantTypes: ['password', 'refresh_token'], accessTokenFormat: format });
    }
    service = await server.client({ grantTypes: ['client_credentials'] });
    probe = await server.client({ grantTypes: ['client_credentials'] });
    cluster = await spawnCluster({ DATABASE_URL: server.db.url, LATCHKEY_SECRET: server.ctx.config.secret!, METRICS_TOKEN });
    const admin = await answer(
      await freshPost(`${cluster.url}/oauth/v20/token`, {
        grant_type: 'password',
        client_id: 'admin-cli',
        username: 'admin',
        password: ADMIN_PASSWORD,
        scope: 'admin',
      }),
    );
    expect(admin.status).toBe(200);
    adminToken = admin.body.access_token!;
  });
  afterAll(async () => {
    await cluster?.stop();
    await server?.stop();
  });

  const token = (app: App, fields: Fields) =>
    freshPost(
      `${cluster.url}/oauth/v20/token`,
      fields,
      app.clientSecret ? { authorization: basic(app.clientId, app.clientSecret) } : {},
    ).then(answer);
  const passwordGrant = (app: App, username: string) => token(app, { grant_type: 'password', username, password: password(username) });
  const me = (accessToken: string) => freshGet(`${cluster.url}/api/oauth/v20/me`, {}, { authorization: `Bearer ${accessToken}` });
  /** The status of /me for the token on SPREAD connections: what every worker says of it. */
  const meEverywhere = (accessToken: string) => inTurn(SPREAD, async () => (await me(accessToken)).status);
  const everywhere = (status: number) => Array<number>(SPREAD).fill(status);

  /** The same request CONCURRENCY times at once, each on its own connection. */
  const concurrently = (app: App, fields: Fields) => Promise.all(Array.from({ length: CONCURRENCY }, () => token(app, fields)));

  /** What is wrong with one race: exactly one 200 and the rest `400 expectedError`. */
  function judge(round: string, answers: Answer[], expectedError: string): { problems: string[]; winner?: Answer } {
    const problems: string[] = [];
    const winners = answers.filter((a) => a.status === 200);
    if (winners.length !== 1) problems.push(`${round}: ${winners.length} of ${CONCURRENCY} requests got 200 (expected exactly 1)`);
    for (const a of answers.filter((x) => x.status !== 200)) {
      if (a.status !== 400 || a.body.error !== expectedError)
        problems.push(`${round}: a loser got ${a.status} ${a.body.error} (expected 400 ${expectedError})`);
    }
    return { problems, winner: winners.length === 1 ? winners[0] : undefined };
  }

  /** Once the race is over, the winner's tokens are dead on every worker: the replay revoked them (docs/decisions.md). */
  async function winnerRevoked(round: string, app: App, winner: Answer): Promise<string[]> {
    const problems: string[] = [];
    const statuses = await meEverywhere(winner.body.access_token!);
    if (statuses.some((s) => s !== 401))
      problems.push(`${round}: the winner's access token answers ${statuses.join(',')} at /me (expected 401 on every worker)`);
    const refresh = await token(app, { grant_type: 'refresh_token', refresh_token: winner.body.refresh_token! });
    if (refresh.status !== 400 || refresh.body.error !== 'invalid_refresh_token') {
      problems.push(
        `${round}: the winner's refresh token got ${refresh.status} ${refresh.body.error ?? ''} (expected 400 invalid_refresh_token)`,
      );
    }
    return problems;
  }

  test('the primary runs two workers on one port, each of which logged that it listens', () => {
    expect(cluster.workerPids()).toHaveLength(2);
    expect(new Set(cluster.logged('latchkey listening').map((l) => l.worker))).toEqual(new Set([1, 2]));
  });

  test(`single-use codes: ${CONCURRENCY} concurrent exchanges of one code give one 200 and the rest invalid_code, and the replay revokes the winner's tokens (${ROUNDS} rounds per access token format)`, async () => {
    const problems: string[] = [];
    const browserNode = { url: cluster.url } as TestServer;
    for (const format of formats) {
      const app = codeApps[format];
      for (let round = 1; round <= ROUNDS; round++) {
        const label = `${format} round ${round}`;
        const { code } = await obtainCode(new Browser(browserNode), app, 'alice', password('alice'));
        const answers = await concurrently(app, { grant_type: 'authorization_code', code, redirect_uri: app.redirectUri });
        const judged = judge(label, answers, 'invalid_code');
        problems.push(...judged.problems);
        if (judged.winner) problems.push(...(await winnerRevoked(label, app, judged.winner)));
      }
    }
    expect(problems).toEqual([]);
  });

  test(`refresh reuse detection: ${CONCURRENCY} concurrent presentations of one refresh token give one 200 and the rest invalid_refresh_token, and the reuse revokes the winner's tokens (${ROUNDS} rounds per access token format)`, async () => {
    const problems: string[] = [];
    for (const format of formats) {
      const app = passwordApps[format];
      for (let round = 1; round <= ROUNDS; round++) {
        const label = `${format} round ${round}`;
        const first = await passwordGrant(app, 'alice');
        expect(first.status).toBe(200);
        const answers = await concurrently(app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token! });
        const judged = judge(label, answers, 'invalid_refresh_token');
        problems.push(...judged.problems);
        if (judged.winner) problems.push(...(await winnerRevoked(label, app, judged.winner)));
      }
    }
    expect(problems).toEqual([]);
  });

  test('refresh reuse detection: a rotated refresh token replayed on one worker revokes the family, and every worker refuses its successor', async () => {
    // Each round is five requests, so the steps land on the other worker from one round to the next.
    for (let round = 0; round < 4; round++) {
      const app = passwordApps[formats[round % 2]!];
      const first = await passwordGrant(app, 'alice');
      expect(first.status).toBe(200);
      const rotated = await token(app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token! });
      expect(rotated.status).toBe(200);
      expect(rotated.body.refresh_token).not.toBe(first.body.refresh_token);

      const replay = await token(app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token! });
      expect({ status: replay.status, error: replay.body.error }).toEqual({ status: 400, error: 'invalid_refresh_token' });
      const successor = await token(app, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token! });
      expect({ status: successor.status, error: successor.body.error }).toEqual({ status: 400, error: 'invalid_refresh_token' });
      expect(await meEverywhere(rotated.body.access_token!)).toEqual(everywhere(401));
    }
  });

  test('revocation is seen at once: right after /oauth/v20/revoke, every worker refuses the access token', async () => {
    for (const format of formats) {
      const app = passwordApps[format];
      const issued = await passwordGrant(app, 'alice');
      expect(issued.status).toBe(200);
      expect(await meEverywhere(issued.body.access_token!)).toEqual(everywhere(200));

      const revoked = await freshPost(
        `${cluster.url}/oauth/v20/revoke`,
        { token: issued.body.access_token! },
        { authorization: basic(app.clientId, app.clientSecret!) },
      );
      expect(revoked.status).toBe(200);

      const after = await inTurn(SPREAD, async () => {
        const res = await me(issued.body.access_token!);
        return {
          status: res.status,
          error: ((await res.json()) as { error?: string }).error,
          challenge: res.headers.get('www-authenticate'),
        };
      });
      for (const a of after) {
        expect({ status: a.status, error: a.error }).toEqual({ status: 401, error: 'invalid_access_token' });
        expect(a.challenge).toContain('error="invalid_access_token"');
      }
    }
  });

  test('the brute-force policy is counted across workers: 40 concurrent wrong passwords for one user, exactly 5 checked (400) and 35 throttled (429)', async () => {
    const app = passwordApps.opaque;
    // A failure of a wrong password names no user in the audit trail: count every failure.
    const failures = async () => Number((await server.sql('audit_events').where({ kind: 'login.failure' }).count({ n: '*' }))[0]!.n);
    const failuresBefore = await failures();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        freshPost(
          `${cluster.url}/oauth/v20/token`,
          { grant_type: 'password', username: 'bob', password: `wrong-${i}` },
          { authorization: basic(app.clientId, app.clientSecret!) },
        ).then(throttleAnswer),
      ),
    );
    expect(tally(answers)).toEqual({ 400: 5, 429: 35 });
    for (const a of answers) {
      if (a.status === 400) expectRefused(a);
      else expectThrottled(a);
    }
    // Only the checked guesses are failures in the audit trail.
    expect((await failures()) - failuresBefore).toBe(5);
  });

  test('a client secret rotated through the admin API on one worker: every worker refuses the old secret and accepts the new one at once', async () => {
    const grant = (secret: string) => token({ clientId: service.clientId, clientSecret: secret }, { grant_type: 'client_credentials' });
    expect((await inTurn(SPREAD, () => grant(service.clientSecret!))).map((a) => a.status)).toEqual(everywhere(200));

    const rotated = await freshGraphql<{ rotateClientSecret: { clientSecret: string } }>(
      cluster.url,
      adminToken,
      'mutation($id: ID!) { rotateClientSecret(clientId: $id) { clientSecret } }',
      { id: service.clientId },
    );
    const fresh = rotated.rotateClientSecret.clientSecret;
    expect(fresh).not.toBe(service.clientSecret);

    // The old secret SPREAD times in a row, then the new one: interleaving them would send each to one worker only.
    const old = await inTurn(SPREAD, () => grant(service.clientSecret!));
    for (const a of old) expect({ status: a.status, error: a.body.error }).toEqual({ status: 401, error: 'invalid_client' });
    const now = await inTurn(SPREAD, () => grant(fresh));
    for (const a of now) {
      expect(a.status).toBe(200);
      expect(a.body.access_token).toBeDefined();
    }
  });

  test('a user disabled through the admin API: every worker refuses their tokens and their password at once', async () => {
    const app = passwordApps.opaque;
    const issued = await passwordGrant(app, 'carol');
    expect(issued.status).toBe(200);
    expect(await meEverywhere(issued.body.access_token!)).toEqual(everywhere(200));

    await freshGraphql(cluster.url, adminToken, 'mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { disabled } }', {
      id: userIds.carol,
    });

    expect(await meEverywhere(issued.body.access_token!)).toEqual(everywhere(401));
    const grants = await inTurn(SPREAD, () => passwordGrant(app, 'carol'));
    // A disabled account's sign-in counts as a failed one (brute-force policy): the first five are
    // checked and refused as disabled, on both workers in turn; the rest wait like any sixth failure.
    expect(grants.slice(0, 5).map((a) => ({ status: a.status, error: a.body.error, error_description: a.body.error_description }))).toEqual(
      Array(5).fill({ status: 400, error: 'invalid_grant', error_description: 'the account is disabled' }),
    );
    for (const a of grants.slice(5)) expect({ status: a.status, error: a.body.error }).toEqual({ status: 429, error: 'invalid_grant' });
  });

  test("a user's tokens revoked through the admin API: every worker refuses them at once", async () => {
    const app = passwordApps.opaque;
    const issued = [await passwordGrant(app, 'dave'), await passwordGrant(app, 'dave')];
    for (const t of issued) expect(t.status).toBe(200);
    const revoked = await freshGraphql<{ revokeTokens: number }>(
      cluster.url,
      adminToken,
      'mutation($id: ID!) { revokeTokens(userId: $id) }',
      { id: userIds.dave },
    );
    expect(revoked.revokeTokens).toBeGreaterThanOrEqual(2);
    for (const t of issued) {
      expect(await meEverywhere(t.body.access_token!)).toEqual(everywhere(401));
      const refresh = await token(app, { grant_type: 'refresh_token', refresh_token: t.body.refresh_token! });
      expect({ status: refresh.status, error: refresh.body.error }).toEqual({ status: 400, error: 'invalid_refresh_token' });
    }
  });

  test('/metrics needs the metrics token on every worker, and its totals cover every worker', async () => {
    const refused = await inTurn(
      SPREAD,
      async (i) => (await freshGet(`${cluster.url}/metrics`, {}, i % 4 === 3 ? { authorization: 'Bearer not-the-token' } : {})).status,
    );
    expect(refused).toEqual(everywhere(401));

    const healthz = { route: '/healthz', method: 'GET', status: '200' };
    const before = await scrape(cluster.url, METRICS_TOKEN);
    // K requests alternate between the workers: a total of only the answering worker would be K / 2.
    const K = 12;
    const answered = await inTurn(K, async () => (await freshGet(`${cluster.url}/healthz`)).status);
    expect(answered).toEqual(Array(K).fill(200));
    const after = await scrape(cluster.url, METRICS_TOKEN);
    expect(sampleValue(after, 'latchkey_http_requests_total', healthz) - sampleValue(before, 'latchkey_http_requests_total', healthz)).toBe(
      K,
    );
    // The parser merges a labelled histogram's series into one (it keeps only the buckets): its type is all
    // that can be read from it.
    expect(family(after, 'latchkey_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    // The next scrape is answered by the other worker: the same totals.
    const again = await scrape(cluster.url, METRICS_TOKEN);
    expect(sampleValue(again, 'latchkey_http_requests_total', healthz)).toBe(sampleValue(after, 'latchkey_http_requests_total', healthz));

    const issuedBefore = sampleValue(again, 'latchkey_tokens_issued_total', { grant: 'password' });
    const loginsBefore = sampleValue(again, 'latchkey_logins_total', { backend: 'local', result: 'success' });
    expect((await passwordGrant(passwordApps.opaque, 'alice')).status).toBe(200);
    const last = await scrape(cluster.url, METRICS_TOKEN);
    expect(sampleValue(last, 'latchkey_tokens_issued_total', { grant: 'password' }) - issuedBefore).toBe(1);
    expect(sampleValue(last, 'latchkey_logins_total', { backend: 'local', result: 'success' }) - loginsBefore).toBe(1);
    expect(sampleValue(last, 'process_resident_memory_bytes', {})).toBeGreaterThan(0);
  });

  test('a worker killed with SIGKILL is replaced, and the server answers all along', async () => {
    const [victim, survivor] = cluster.workerPids();
    expect(survivor).toBeDefined();
    const listening = cluster.logged('latchkey listening').length;
    process.kill(victim!, 'SIGKILL');

    await cluster.waitFor('the death to be logged', () =>
      cluster.logged('a worker died; starting a new one').some((l) => l.pid === victim),
    );
    expect(cluster.logged('a worker died; starting a new one')).toEqual([expect.objectContaining({ pid: victim, signal: 'SIGKILL' })]);
    // While the replacement starts, the survivor answers everything.
    expect(await inTurn(SPREAD, async () => (await freshGet(`${cluster.url}/healthz`)).status)).toEqual(everywhere(200));

    await cluster.waitFor('the replacement to listen', () => cluster.logged('latchkey listening').length === listening + 1);
    const pids = cluster.workerPids();
    expect(pids).toHaveLength(2);
    expect(pids).toContain(survivor);
    expect(pids).not.toContain(victim);
    // Both workers, the replacement among them, answer from the database.
    const answers = await inTurn(SPREAD, () => token(probe, { grant_type: 'client_credentials' }));
    expect(answers.map((a) => a.status)).toEqual(everywhere(200));
  });

  test('SIGTERM to the primary: requests in flight are answered, every worker stops, the primary exits 0', async () => {
    const workers = cluster.workerPids();
    expect(workers).toHaveLength(2);
    const inFlight: Array<ReturnType<typeof requestInFlight>> = [];
    for (let i = 0; i < 6; i++) {
      inFlight.push(
        requestInFlight(
          cluster.url,
          '/oauth/v20/token',
          { grant_type: 'client_credentials' },
          { authorization: basic(probe.clientId, probe.clientSecret!) },
        ),
      );
      await sleep(50);
    }
    // Time for the primary to hand the connections to the workers and for them to read the headers.
    await sleep(500);
    // Both workers are in the middle of requests.
    const held = cluster.connectionsPerWorker();
    expect([...held.keys()].sort()).toEqual([...workers].sort());
    expect([...held.values()].reduce((a, b) => a + b, 0)).toBe(6);
    for (const n of held.values()) expect(n).toBeGreaterThanOrEqual(1);
    process.kill(cluster.pid, 'SIGTERM');
    await cluster.waitFor(
      'both workers to begin shutting down',
      () => cluster.logged('shutting down').filter((l) => l.worker !== undefined && l.reason === 'SIGTERM').length === 2,
    );
    await sleep(200);
    for (const r of inFlight) r.finish();

    for (const res of await Promise.all(inFlight.map((r) => r.response))) {
      expect(res.status).toBe(200);
      expect((JSON.parse(res.body) as { access_token?: string }).access_token).toBeDefined();
    }
    expect(await cluster.exited).toBe(0);
    expect(cluster.logged('every worker stopped')).toEqual([expect.objectContaining({ exitCode: 0 })]);
    expect(cluster.output()).not.toContain('did not stop cleanly');
    for (const pid of workers) expect(pidAlive(pid)).toBe(false);
  });
});
