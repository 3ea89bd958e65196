import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { databaseKinds } from '../helpers/databases.ts';
import { failInsertsInto, withOwnConnection } from '../helpers/db-fault.ts';
import { Browser, obtainCode } from '../helpers/flow.ts';
import { basic, get, postForm, type Fields } from '../helpers/http.ts';
import { spawnLatchkey, type LatchkeyProcess } from '../helpers/latchkey-process.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * docs/security.md and 7 "Atomic writes": a code is single-use and its replay revokes what it issued (RFC 6749
 * §4.1.2); a refresh token is spent once and its reuse revokes the family; spending a refresh token
 * and issuing its successor are one transaction. Checked under real concurrency: on PostgreSQL the
 * concurrent requests are split between this process and a second Latchkey process on the same
 * database, as two nodes behind a load balancer.
 */

const ROUNDS = 20;
const CONCURRENCY = 10;

interface Answer {
  status: number;
  body: { access_token?: string; refresh_token?: string; error?: string; error_description?: string };
}

type Format = 'opaque' | 'jwt';
const formats: Format[] = ['opaque', 'jwt'];
type App = { clientId: string; clientSecret: string | null };

const answer = async (res: Response): Promise<Answer> => ({ status: res.status, body: (await res.json()) as Answer['body'] });

describe.each(databaseKinds)('token races on %s', (kind) => {
  let server: TestServer;
  let peer: LatchkeyProcess | undefined;
  /** The nodes the concurrent requests are spread over: this process, and on PostgreSQL a second one. */
  let nodes: string[];
  /**
   * One client per access token format: opaque tokens, and JWTs (RFC 9068). Signing a JWT takes a moment
   * between spending the code or refresh token and storing the new tokens, which is where a replay that
   * is not atomic with the issue slips through, even in one process on SQLite.
   */
  const codeApps = {} as Record<Format, App & { redirectUri: string }>;
  const passwordApps = {} as Record<Format, App>;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('alice', 'alice-password-1');
    for (const format of formats) {
      codeApps[format] = await server.client({ grantTypes: ['authorization_code', 'refresh_token'], accessTokenFormat: format });
      passwordApps[format] = await server.client({ grantTypes: ['password', 'refresh_token'], accessTokenFormat: format });
    }
    nodes = [server.url];
    if (kind === 'postgres') {
      peer = await spawnLatchkey({ DATABASE_URL: server.db.url, LATCHKEY_SECRET: server.ctx.config.secret! });
      nodes.push(peer.url);
    }
  });
  afterAll(async () => {
    await peer?.stop();
    await server?.stop();
  });

  const token = (node: string, app: App, fields: Fields) =>
    postForm(`${node}/oauth/v20/token`, fields, { authorization: basic(app.clientId, app.clientSecret!) }).then(answer);

  /** The same request CONCURRENCY times at once, spread over the nodes. */
  const concurrently = (app: App, fields: Fields) =>
    Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => token(nodes[i % nodes.length]!, app, fields)));

  const meStatus = async (accessToken: string) =>
    (await get(`${server.url}/api/oauth/v20/me`, {}, { authorization: `Bearer ${accessToken}` })).status;

  /** What is wrong with one round's answers: exactly one 200 and the rest `400 expectedError`. */
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

  /** Once every request has answered, the winner's tokens must be dead: the replay revoked them. */
  async function winnerRevoked(round: string, app: App, winner: Answer): Promise<string[]> {
    const problems: string[] = [];
    const me = await meStatus(winner.body.access_token!);
    if (me !== 401) problems.push(`${round}: the winner's access token still answers ${me} at /me (expected 401)`);
    const refresh = await token(server.url, app, { grant_type: 'refresh_token', refresh_token: winner.body.refresh_token! });
    if (refresh.status !== 400 || refresh.body.error !== 'invalid_refresh_token') {
      problems.push(
        `${round}: the winner's refresh token got ${refresh.status} ${refresh.body.error ?? ''} (expected 400 invalid_refresh_token)`,
      );
    }
    return problems;
  }

  test(`a code redeemed by ${CONCURRENCY} concurrent requests: one 200, the rest invalid_code, and the replay revokes the winner's tokens (${ROUNDS} rounds per access token format)`, async () => {
    const problems: string[] = [];
    for (const format of formats) {
      const app = codeApps[format];
      for (let round = 1; round <= ROUNDS; round++) {
        const label = `${format} round ${round}`;
        const { code } = await obtainCode(new Browser(server), app, 'alice', 'alice-password-1');
        const answers = await concurrently(app, { grant_type: 'authorization_code', code, redirect_uri: app.redirectUri });
        const judged = judge(label, answers, 'invalid_code');
        problems.push(...judged.problems);
        if (judged.winner) problems.push(...(await winnerRevoked(label, app, judged.winner)));
      }
    }
    expect(problems).toEqual([]);
  });

  test(`a refresh token presented by ${CONCURRENCY} concurrent requests: one 200, the rest invalid_refresh_token, and the reuse revokes the winner's tokens (${ROUNDS} rounds per access token format)`, async () => {
    const problems: string[] = [];
    for (const format of formats) {
      const app = passwordApps[format];
      for (let round = 1; round <= ROUNDS; round++) {
        const label = `${format} round ${round}`;
        const first = await token(server.url, app, { grant_type: 'password', username: 'alice', password: 'alice-password-1' });
        expect(first.status).toBe(200);
        const answers = await concurrently(app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token! });
        const judged = judge(label, answers, 'invalid_refresh_token');
        problems.push(...judged.problems);
        if (judged.winner) problems.push(...(await winnerRevoked(label, app, judged.winner)));
      }
    }
    expect(problems).toEqual([]);
  });

  test('a refresh that fails in the database between spending the token and issuing its successor leaves the token usable: the retry is not taken for theft', async () => {
    // A client of its own: the races above leave token.reuse_detected events for theirs.
    const passwordApp = await server.client({ grantTypes: ['password', 'refresh_token'] });
    const first = await token(server.url, passwordApp, { grant_type: 'password', username: 'alice', password: 'alice-password-1' });
    expect(first.status).toBe(200);

    // The successor refresh token cannot be written: the database fails mid-refresh.
    const fault = await failInsertsInto(server.db, 'refresh_tokens');
    let failed: Response;
    try {
      failed = await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'refresh_token', refresh_token: first.body.refresh_token! },
        { authorization: basic(passwordApp.clientId, passwordApp.clientSecret!) },
      );
    } finally {
      await fault.remove();
    }
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(failed.headers.get('content-type')).toMatch(/application\/json/);
    const text = await failed.text();
    expect(typeof (JSON.parse(text) as { error?: unknown }).error).toBe('string');
    expect(text).not.toMatch(/injected fault|"stack"|\n\s+at /);

    // The client retries with the same refresh token: the failure was the server's, not the client's.
    const retry = await token(server.url, passwordApp, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token! });
    expect({ status: retry.status, error: retry.body.error }).toEqual({ status: 200, error: undefined });
    expect(retry.body.refresh_token).toBeDefined();
    expect(retry.body.refresh_token).not.toBe(first.body.refresh_token);
    expect(await meStatus(retry.body.access_token!)).toBe(200);

    // Not theft: no reuse was recorded, and the family lives on (the first access token too).
    const reuse = await withOwnConnection(server.db, (k) =>
      k('audit_events').where({ kind: 'token.reuse_detected', client_id: passwordApp.clientId }).select('id'),
    );
    expect(reuse).toEqual([]);
    expect(await meStatus(first.body.access_token!)).toBe(200);
    const next = await token(server.url, passwordApp, { grant_type: 'refresh_token', refresh_token: retry.body.refresh_token! });
    expect(next.status).toBe(200);
  });
});
