import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countRows, seedDeadRows } from '../helpers/expired-rows.ts';
import { spawnLatchkey, type LatchkeyProcess } from '../helpers/latchkey-process.ts';
import { closedLoop } from '../helpers/load.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { passwordGrant, sleep } from '../helpers/throttle.ts';

/** Rows that expire while `/me` is under load; the full million-row run is `npm run bench:purge`. */
const ROWS = 15_000;
const CONNECTIONS = 8;

/**
 * docs/operating-latchkey.md: the purge never stalls requests. On SQLite the purge runs in the server's own process and
 * holds the event loop while a batch runs, so this is where it could: `/me`'s p99 while a backlog is
 * purged stays under twice its p99 without one (plus a floor for a shared machine's noise). The server is its own process (as `npm start` runs
 * it), so the load's timing is not the server's.
 */
describe('the purge under load (SQLite)', () => {
  let setup: TestServer;
  let server: LatchkeyProcess;
  let dir: string;
  let accessToken: string;
  let ids: { clientId: string; userId: string };

  beforeAll(async () => {
    setup = await startTestServer('sqlite');
    const client = await setup.client({ grantTypes: ['password'] });
    ids = { clientId: client.clientId, userId: await setup.user('alice', 'alice-password-1') };
    dir = mkdtempSync(join(tmpdir(), 'latchkey-purge-load-'));
    writeFileSync(join(dir, 'config.yaml'), 'retention:\n  interval: 1\n');
    server = await spawnLatchkey({
      DATABASE_URL: setup.db.url,
      LATCHKEY_SECRET: setup.ctx.config.secret!,
      LATCHKEY_CONFIG: join(dir, 'config.yaml'),
    });
    accessToken = ((await (await passwordGrant(server.url, client, 'alice', 'alice-password-1')).json()) as { access_token: string })
      .access_token;
  });
  afterAll(async () => {
    await server?.stop();
    await setup?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("/me's p99 while a backlog is purged stays under twice its p99 without one", async () => {
    const me = ['/api/oauth/v20/me', { authorization: `Bearer ${accessToken}` }] as const;
    await closedLoop(server.url, ...me, CONNECTIONS, 1500); // warm-up
    const quiet = await closedLoop(server.url, ...me, CONNECTIONS, 3000);

    // Rows that are still live while they are written (the purge runs every second and must not
    // start mid-seed), and expire together a moment later, under load.
    const expireAt = Date.now() + 4000;
    const seeded = await seedDeadRows(setup.sql, ROWS, { ...ids, expiredAt: expireAt });
    const purgedBefore = await scrape(server.url);
    expect(Date.now()).toBeLessThan(expireAt - 500);
    const before = await countRows(setup.sql);
    await sleep(Math.max(0, expireAt - 500 - Date.now()));
    const busy = await closedLoop(server.url, ...me, CONNECTIONS, 7000);

    // The whole backlog went while the load ran: every seeded row was there at its start, and the
    // purge counted exactly the seeded rows of the expiring tables.
    const purgedAfter = await scrape(server.url);
    const purged = (table: string) =>
      sample(purgedAfter, 'latchkey_purged_rows_total', { table }) - sample(purgedBefore, 'latchkey_purged_rows_total', { table });
    for (const table of ['access_tokens', 'refresh_tokens', 'auth_codes', 'sso_sessions'] as const) {
      expect(before[table]).toBeGreaterThanOrEqual(seeded[table]);
      expect(purged(table)).toBe(seeded[table]);
    }
    expect({ quietFailures: quiet.failures, busyFailures: busy.failures }).toEqual({ quietFailures: 0, busyFailures: 0 });
    process.stdout.write(
      `/me at ${CONNECTIONS} connections: p99 ${quiet.p99.toFixed(1)} ms quiet (${quiet.requests} requests), ${busy.p99.toFixed(1)} ms while ${ROWS} rows were purged (${busy.requests})\n`,
    );
    // Twice the quiet p99, plus a floor for what other work on a shared 2-core machine does to a p99
    // between two runs (seen: 11.8 ms quiet, 29.5 ms busy with no purge fault). A stall is far above
    // it: one unbounded batch of this backlog holds the event loop for over 100 ms.
    expect(busy.p99).toBeLessThan(2 * quiet.p99 + 25);
  });
});
