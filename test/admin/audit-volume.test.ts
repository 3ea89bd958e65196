import { afterEach, describe, expect, test } from '@jest/globals';
import { advanceClock, freezeClock, resetClock } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { withOwnConnection } from '../helpers/db-fault.ts';
import { basic, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

interface Row {
  at: number | string;
  user_id: string | null;
  request_id: string | null;
  details: string;
}

/**
 * docs/decisions.md "Audit volume": events about users and admin changes are kept one by one; client_credentials
 * token issues are kept as one event per client and minute with their count, unless
 * `audit.everyToken: true` keeps one per token.
 */
describe.each(databaseKinds)('token issues in the audit trail on %s', (kind) => {
  const servers: TestServer[] = [];
  afterEach(async () => {
    resetClock();
    for (const s of servers.splice(0)) await s.stop();
  });

  async function start(overrides: Record<string, unknown> = {}): Promise<TestServer> {
    const s = await startTestServer(kind, overrides);
    servers.push(s);
    return s;
  }

  async function grants(
    s: TestServer,
    c: { clientId: string; clientSecret: string | null },
    n: number,
    grant: Record<string, string> = { grant_type: 'client_credentials' },
  ): Promise<void> {
    for (let i = 0; i < n; i++) {
      const res = await postForm(`${s.url}/oauth/v20/token`, grant, { authorization: basic(c.clientId, c.clientSecret!) });
      expect(res.status).toBe(200);
    }
  }

  const issued = (s: TestServer, clientId: string): Promise<Row[]> =>
    withOwnConnection(s.db, (k) =>
      k('audit_events').where({ kind: 'token.issued', client_id: clientId }).orderBy('id').select('at', 'user_id', 'request_id', 'details'),
    );
  const counts = (rows: Row[]) => rows.map((r) => JSON.parse(r.details) as { grant: string; count?: number; from?: string; to?: string });

  test("50 client_credentials grants in a row are one event with count 50, written at shutdown at the latest; a user's token and the admin change stay one event each", async () => {
    const s = await start();
    s.logs.length = 0;
    freezeClock();
    const c = await s.client({ grantTypes: ['client_credentials', 'password'] });
    await s.user('pat', 'pat-password-1');
    await grants(s, c, 50);
    await grants(s, c, 2, { grant_type: 'password', username: 'pat', password: 'pat-password-1' });
    await s.close();

    const rows = await issued(s, c.clientId);
    const summaries = rows.filter((r) => r.user_id === null);
    expect(summaries).toHaveLength(1);
    expect(counts(summaries)[0]).toEqual({ grant: 'client_credentials', count: 50, from: expect.any(String), to: expect.any(String) });
    expect(Number(summaries[0]!.at) % 60_000).toBe(0);
    expect(summaries[0]!.request_id).toBeNull();
    // The user's tokens: one event each, with their request.
    const perUser = rows.filter((r) => r.user_id !== null);
    expect(counts(perUser)).toEqual([
      { grant: 'password', scope: expect.any(String) },
      { grant: 'password', scope: expect.any(String) },
    ]);
    expect(perUser.every((r) => r.request_id)).toBe(true);
    const registered = await withOwnConnection(s.db, (k) =>
      k('audit_events').where({ kind: 'admin.change', client_id: c.clientId }).count({ n: '*' }),
    );
    expect(Number(registered[0]!.n)).toBe(1);
    expect(s.logs).toEqual([]);
  });

  test('each minute is its own event; a minute written already is added to, also by another server on the same database', async () => {
    const a = await start();
    const b = await start({ databaseUrl: a.db.url });
    freezeClock();
    const c = await a.client({ grantTypes: ['client_credentials'] });
    await grants(a, c, 20);
    await a.ctx.tokenAudit.flush(true);
    await grants(b, c, 25);
    await b.ctx.tokenAudit.flush(true);
    await grants(a, c, 5);
    await a.ctx.tokenAudit.flush(true);
    expect(counts(await issued(a, c.clientId)).map((d) => d.count)).toEqual([50]);

    advanceClock(60_000);
    freezeClock();
    await grants(b, c, 7);
    // A minute still running is not written by the periodic flush; a finished one is.
    await b.ctx.tokenAudit.flush();
    expect(await issued(a, c.clientId)).toHaveLength(1);
    advanceClock(60_000);
    await b.ctx.tokenAudit.flush();
    const rows = await issued(a, c.clientId);
    expect(counts(rows).map((d) => d.count)).toEqual([50, 7]);
    expect(Number(rows[1]!.at) - Number(rows[0]!.at)).toBeGreaterThanOrEqual(60_000);
  });

  test('audit.everyToken: true keeps one event per token', async () => {
    const s = await start({ audit: { everyToken: true } });
    const c = await s.client({ grantTypes: ['client_credentials'] });
    await grants(s, c, 50);
    const rows = await issued(s, c.clientId);
    expect(rows).toHaveLength(50);
    expect(counts(rows).every((d) => d.grant === 'client_credentials' && d.count === undefined)).toBe(true);
    expect(rows.every((r) => r.request_id)).toBe(true);
  });
});
