import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { databaseKinds } from '../helpers/databases.ts';
import { countRows, seedDeadRows, type RowCounts } from '../helpers/expired-rows.ts';
import { get } from '../helpers/http.ts';
import { scrape } from '../helpers/metrics.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { passwordGrant, sleep } from '../helpers/throttle.ts';
import { PURGED_TABLES } from '../../src/retention/model.ts';

const run = promisify(execFile);
const DAY = 24 * 3600 * 1000;

/** `npm run latchkey -- purge` on the server's database, with an optional config file; its JSON output. */
async function purgeCli(server: TestServer, config = ''): Promise<{ deleted: RowCounts }> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-purge-'));
  try {
    writeFileSync(join(dir, 'config.yaml'), config);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/latchkey.ts', 'purge'], {
      env: {
        PATH: process.env.PATH!,
        DATABASE_URL: server.db.url,
        LATCHKEY_SECRET: server.ctx.config.secret!,
        LATCHKEY_CONFIG: join(dir, 'config.yaml'),
      },
    });
    return JSON.parse(stdout) as { deleted: RowCounts };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A counter's value per label set, from /metrics parsed as Prometheus text. */
async function purgedTotals(url: string): Promise<Record<string, number>> {
  const families = await scrape(url);
  const family = families.find((f) => f.name === 'latchkey_purged_rows_total');
  return Object.fromEntries((family?.metrics ?? []).map((m) => [m.labels!.table!, Number(m.value)]));
}

describe.each(databaseKinds)('retention on %s', (kind) => {
  let server: TestServer;
  let client: { clientId: string; clientSecret: string | null };
  let userId: string;

  beforeAll(async () => {
    server = await startTestServer(kind);
    client = await server.client({ grantTypes: ['password', 'refresh_token'], scopes: ['openid', 'profile'] });
    userId = await server.user('alice', 'alice-password-1');
  });
  afterAll(() => server.stop());

  test('a purge deletes what has expired, keeps what is live, and prints the counts per table', async () => {
    const live = (await (await passwordGrant(server.url, client, 'alice', 'alice-password-1')).json()) as {
      access_token: string;
      refresh_token: string;
    };
    const now = Date.now();
    const seeded = await seedDeadRows(server.sql, 3000, { clientId: client.clientId, userId, expiredAt: now - 60_000 });
    // Rows the purge must keep: a throttle key still blocking, one inside its window, a recent audit event.
    await server.sql('login_throttle').insert([
      { key: 'still-blocked', failures: 9, window_start: now - 2 * DAY, blocked_until: now + 600_000 },
      { key: 'in-window', failures: 2, window_start: now - 60_000, blocked_until: 0 },
    ]);
    await server.sql('audit_events').insert({ at: now - 10 * DAY, kind: 'login.failure', client_id: client.clientId });
    const before = await countRows(server.sql);

    const { deleted } = await purgeCli(server);

    expect(deleted).toEqual(seeded);
    const after = await countRows(server.sql);
    for (const table of Object.keys(seeded) as Array<keyof RowCounts>) expect(after[table]).toBe(before[table] - seeded[table]);
    expect((await server.sql('login_throttle').whereIn('key', ['still-blocked', 'in-window']).select('key')).length).toBe(2);
    // The live tokens still work: the access token at /me, the refresh token at the token endpoint.
    expect((await get(`${server.url}/api/oauth/v20/me`, { access_token: live.access_token })).status).toBe(200);
    const refreshed = await fetch(`${server.url}/oauth/v20/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: live.refresh_token }),
    });
    expect(refreshed.status).toBe(200);

    // A second pass finds nothing.
    expect(Object.values((await purgeCli(server)).deleted).every((n) => n === 0)).toBe(true);
  });

  test('auditDays 0 keeps every audit event; a number keeps that many days', async () => {
    const now = Date.now();
    await server.sql('audit_events').insert([
      { at: now - 400 * DAY, kind: 'login.failure', client_id: client.clientId },
      { at: now - 20 * DAY, kind: 'login.failure', client_id: client.clientId },
    ]);
    expect((await purgeCli(server, 'retention:\n  auditDays: 0\n')).deleted.audit_events).toBe(0);
    expect((await purgeCli(server, 'retention:\n  auditDays: 30\n')).deleted.audit_events).toBe(1);
    expect((await purgeCli(server, 'retention:\n  auditDays: 7\n')).deleted.audit_events).toBeGreaterThanOrEqual(1);
    expect(
      await server
        .sql('audit_events')
        .where('at', '<', now - 7 * DAY)
        .count({ n: '*' })
        .then((r) => Number(r[0]!.n)),
    ).toBe(0);
  });

  test('two processes purging on a schedule share the work: every row is deleted and counted once', async () => {
    const second = await startTestServer(kind, { databaseUrl: server.db.url, retention: { interval: 1 } });
    const first = await startTestServer(kind, { databaseUrl: server.db.url, retention: { interval: 1 } });
    try {
      const seeded = await seedDeadRows(server.sql, 2000, { clientId: client.clientId, userId, expiredAt: Date.now() - 60_000 });
      const deadline = Date.now() + 20_000;
      while (Object.values(await countRowsOlderThan(server, Date.now() - 30_000)).some((n) => n > 0)) {
        if (Date.now() > deadline)
          throw new Error(`not purged within 20 s: ${JSON.stringify(await countRowsOlderThan(server, Date.now() - 30_000))}`);
        await sleep(200);
      }
      const [a, b] = [await purgedTotals(first.url), await purgedTotals(second.url)];
      for (const table of Object.keys(seeded) as Array<keyof RowCounts>) expect((a[table] ?? 0) + (b[table] ?? 0)).toBe(seeded[table]);
      // One lease row, held by one of them.
      expect((await server.sql('maintenance_leases').select('name')).map((r) => r.name)).toEqual(['retention.purge']);
    } finally {
      await first.stop();
      await second.stop();
    }
  });
});

const EXPIRING = PURGED_TABLES.filter(
  (t) => !['auth_codes', 'access_tokens', 'refresh_tokens', 'sso_sessions', 'login_throttle', 'audit_events'].includes(t),
);

/** Rows of the seeded kind that are dead as of `before` (expired, or for throttle and audit, old). */
async function countRowsOlderThan(server: TestServer, before: number): Promise<Record<string, number>> {
  const n = async (q: Promise<Array<Record<string, unknown>>>) => Number((await q)[0]!.n);
  return {
    auth_codes: await n(server.sql('auth_codes').where('expires_at', '<', before).count({ n: '*' })),
    access_tokens: await n(server.sql('access_tokens').where('expires_at', '<', before).count({ n: '*' })),
    refresh_tokens: await n(server.sql('refresh_tokens').where('expires_at', '<', before).count({ n: '*' })),
    sso_sessions: await n(server.sql('sso_sessions').where('expires_at', '<', before).count({ n: '*' })),
    login_throttle: await n(
      server
        .sql('login_throttle')
        .where('window_start', '<', before - DAY)
        .andWhere('blocked_until', '<=', before)
        .count({ n: '*' }),
    ),
    audit_events: await n(
      server
        .sql('audit_events')
        .where('at', '<', before - 100 * DAY)
        .count({ n: '*' }),
    ),
    // Every other purged table has an expires_at: each is waited for, whichever the purge reaches last.
    ...Object.fromEntries(
      await Promise.all(
        EXPIRING.map(async (table) => [table, await n(server.sql(table).where('expires_at', '<', before).count({ n: '*' }))] as const),
      ),
    ),
  };
}
