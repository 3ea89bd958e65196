/**
 * PostgreSQL round trips of the hot token paths (issue 26): node-postgres sends one statement per
 * round trip, so their number is what bounds these paths on PostgreSQL, whatever the load on the
 * machine. Counted at the driver, averaged over several operations in a row (writes deferred past a
 * response, such as a batched audit event, land in the next operation's count).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { locationQuery, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const statements: string[] = [];
const original = pg.Client.prototype.query;
/**
 * Background jobs' statements, sent whatever the requests do (the outbox's poll of its sinks, a
 * maintenance lease): not a request's round trips, and one landing in a count made it fail by chance.
 */
const BACKGROUND = /\b(event_sinks|maintenance_leases)\b/;

describe('round trips per hot operation on PostgreSQL', () => {
  let server: TestServer;
  let app: { clientId: string; clientSecret: string | null; redirectUri: string };
  let tokenUrl: string;

  beforeAll(async () => {
    server = await startTestServer('postgres');
    await server.user('dora', 'dora-password-1');
    app = await server.client({
      grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
      scopes: ['openid', 'profile', 'offline_access'],
    });
    tokenUrl = `${server.url}/oauth/v20/token`;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const q = args[0] as string | { text?: string };
      const text = typeof q === 'string' ? q : (q.text ?? '?');
      if (!BACKGROUND.test(text)) statements.push(text);
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof original;
  });
  afterAll(async () => {
    pg.Client.prototype.query = original;
    await server.stop();
  });

  /** Statements per operation: the average over `times` runs after one uncounted warm-up. */
  async function perOperation(op: () => Promise<void>, times = 5): Promise<{ average: number; sample: string[] }> {
    await op();
    const from = statements.length;
    for (let i = 0; i < times; i++) await op();
    return {
      average: (statements.length - from) / times,
      sample: statements.slice(from, from + Math.ceil((statements.length - from) / times)),
    };
  }

  const clientAuth = () => ({ client_id: app.clientId, client_secret: app.clientSecret! });

  test('client_credentials', async () => {
    const { average, sample } = await perOperation(async () => {
      const res = await postForm(tokenUrl, { grant_type: 'client_credentials', ...clientAuth() });
      expect(res.status).toBe(200);
    });
    process.stdout.write(`client_credentials: ${average} statements\n  ${sample.join('\n  ')}\n`);
    // The token's insert alone: it checks the kept client's version itself (client-endpoint.ts
    // `checksClientVersion`), so the version is not read first (was 2: the version, then the insert).
    expect(average).toBeLessThanOrEqual(1);
  });

  test('introspection', async () => {
    const token = (
      (await (await postForm(tokenUrl, { grant_type: 'client_credentials', ...clientAuth() })).json()) as { access_token: string }
    ).access_token;
    const { average, sample } = await perOperation(async () => {
      const res = await postForm(`${server.url}/oauth/v20/introspect`, { token, ...clientAuth() });
      expect(((await res.json()) as { active: boolean }).active).toBe(true);
    });
    process.stdout.write(`introspection: ${average} statements\n  ${sample.join('\n  ')}\n`);
    // The token with its client and user, and the caller's version, in one read (was 2: the version first).
    expect(average).toBeLessThanOrEqual(1);
  });

  test('code exchange (the token request only)', async () => {
    const browser = new Browser(server);
    const query = { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', scope: 'openid profile offline_access' };
    const codes = [(await obtainCode(browser, app, 'dora', 'dora-password-1', query)).code!];
    // Signed in: the next codes come straight from the SSO session.
    for (let i = 0; i < 6; i++) codes.push(locationQuery(await browser.authorize(query)).code!);
    const { average, sample } = await perOperation(async () => {
      const res = await exchangeCode(server, app, codes.shift()!);
      expect(res.status).toBe(200);
    });
    process.stdout.write(`code exchange: ${average} statements\n  ${sample.join('\n  ')}\n`);
    // Client, then the code with its session and user in one join, and spend-issue-and-audit as one
    // statement (was BEGIN, spend, two inserts, COMMIT, then the audit event): 3 (was 9).
    expect(average).toBeLessThanOrEqual(3);
  });

  test('refresh', async () => {
    const browser = new Browser(server);
    const { code } = await obtainCode(browser, app, 'dora', 'dora-password-1', { scope: 'openid offline_access' });
    let refresh = ((await (await exchangeCode(server, app, code!)).json()) as { refresh_token: string }).refresh_token;
    const { average, sample } = await perOperation(async () => {
      const res = await postForm(tokenUrl, { grant_type: 'refresh_token', refresh_token: refresh, ...clientAuth() });
      expect(res.status).toBe(200);
      refresh = ((await res.json()) as { refresh_token: string }).refresh_token;
    });
    process.stdout.write(`refresh: ${average} statements\n  ${sample.join('\n  ')}\n`);
    // Client, the refresh token with its user, and spend-issue-and-audit as one statement.
    expect(average).toBeLessThanOrEqual(3);
  });

  test('32 concurrent client_credentials: every token committed, their inserts grouped into fewer statements', async () => {
    const before = Number((await server.sql('access_tokens').count({ n: '*' }).first())?.n);
    const from = statements.length;
    const answers = await Promise.all(
      Array.from({ length: 32 }, () => postForm(tokenUrl, { grant_type: 'client_credentials', ...clientAuth() })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(32).fill(200));
    const tokens = await Promise.all(answers.map(async (r) => ((await r.json()) as { access_token: string }).access_token));
    expect(new Set(tokens).size).toBe(32);
    expect(Number((await server.sql('access_tokens').count({ n: '*' }).first())?.n)).toBe(before + 32);
    const writes = statements.slice(from).filter((q) => /insert into access_tokens/.test(q));
    process.stdout.write(
      `32 concurrent client_credentials: ${statements.length - from} statements, ${writes.length} carrying the token inserts\n`,
    );
    // One statement per group commit (fused-steps.ts), not BEGIN, 32 inserts and COMMIT.
    expect(writes.length).toBeLessThan(32);
    for (const t of tokens.slice(0, 3)) {
      const res = await postForm(`${server.url}/oauth/v20/introspect`, { token: t, ...clientAuth() });
      expect(((await res.json()) as { active: boolean }).active).toBe(true);
    }
  });
});
