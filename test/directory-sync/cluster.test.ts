import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshGet, sampleValue, scrape, spawnCluster, type LatchkeyCluster } from '../helpers/cluster.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

const INTERVAL = 10;

/**
 * Directory sync in cluster mode (docs/directory-sync.md "Turning it on"): every worker runs the
 * schedule, the lease lets one of them make each pass, and `/metrics` reports the passes once, not once
 * per worker.
 */
describe.each(databaseKinds)('directory sync in cluster mode on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let cluster: LatchkeyCluster;
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-sync-cluster-'));

  beforeAll(async () => {
    slapd = await startSlapd();
    // The deployment's database, made by a node of its own that does not sync.
    server = await startTestServer(kind, ldapChain(ldapBackendConfig(slapd, { sync: { interval: 0 } })));
    const file = join(dir, 'latchkey.config.json');
    writeFileSync(file, JSON.stringify(ldapChain(ldapBackendConfig(slapd, { sync: { interval: INTERVAL } }))));
    cluster = await spawnCluster({ DATABASE_URL: server.db.url, LATCHKEY_SECRET: server.ctx.config.secret!, LATCHKEY_CONFIG: file });
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
    await server?.stop();
    await slapd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  test('two workers make one pass an interval between them, and the metrics count each pass once', async () => {
    // Each pass records when it started: two passes of the cluster never start less than an interval
    // apart (less half a check's period), where two workers syncing on their own would each make one.
    const starts = new Set<number>();
    await eventually(
      'three passes',
      async () => {
        const row = await server.sql('directory_syncs').where({ backend: 'corp' }).first();
        if (row?.last_at) starts.add(Number(row.last_at));
        return starts.size >= 3;
      },
      { withinMs: 4 * INTERVAL * 1000, everyMs: 200 },
    );
    const ordered = [...starts].sort((a, b) => a - b);
    const gaps = ordered.slice(1).map((t, i) => t - ordered[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(INTERVAL * 1000 - 1000);
    expect(await server.sql('users').where({ backend: 'corp' })).toHaveLength(3);

    // The histogram counts each pass once, in the worker that made it; the gauges read the one row.
    const text = await (await freshGet(`${cluster.url}/metrics`)).text();
    const counted = Number(/^latchkey_directory_sync_duration_seconds_count\{backend="corp"\} (\d+)/m.exec(text)?.[1] ?? 0);
    expect(counted).toBeGreaterThanOrEqual(3);
    expect(counted).toBeLessThanOrEqual(4);
    const families = await scrape(cluster.url);
    const row = await server.sql('directory_syncs').where({ backend: 'corp' }).first();
    const last = sampleValue(families, 'latchkey_directory_sync_last_success_timestamp_seconds', { backend: 'corp' });
    expect(Math.abs(last - Number(row.last_success_at) / 1000)).toBeLessThanOrEqual(INTERVAL);
    expect(sampleValue(families, 'latchkey_directory_sync_refused', { backend: 'corp' })).toBe(0);
    expect(sampleValue(families, 'latchkey_directory_sync_users', { backend: 'corp', outcome: 'created' })).toBe(0);
  });
});
