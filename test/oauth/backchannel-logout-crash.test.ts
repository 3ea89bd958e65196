import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Receiver, sidOf, verifyLogoutToken } from '../helpers/backchannel-receiver.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { get } from '../helpers/http.ts';
import { spawnLatchkey, type LatchkeyProcess } from '../helpers/latchkey-process.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The shortest lease allowed: a notice held by a killed process goes to another 6 s after it was claimed. */
const LEASE = 6000;

/**
 * Two Latchkey processes of one deployment on one database, the first killed (SIGKILL: no shutdown
 * code runs, its claim stays) while it is delivering a logout notice to a receiver that hangs.
 */
describe.each(databaseKinds)('a logout notice survives a killed process on %s', (kind) => {
  let server: TestServer;
  let receiver: Receiver;
  let dir: string;
  const processes: LatchkeyProcess[] = [];

  beforeAll(async () => {
    // The in-process server only sets up (user, client, sign-in) and reads the database: it never
    // polls the queue, so that only the spawned processes deliver.
    server = await startTestServer(kind, { logout: { backchannelPollInterval: 3_600_000 } });
    receiver = await Receiver.start();
    dir = mkdtempSync(join(tmpdir(), 'latchkey-crash-'));
  });
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await receiver?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Another node: the same database, secret and public URL; a quick poll and a short lease. */
  async function node(): Promise<LatchkeyProcess> {
    const file = join(dir, 'latchkey.config.yaml');
    writeFileSync(
      file,
      stringify({ logout: { backchannelClaimLease: LEASE, backchannelPollInterval: 100, backchannelRetryDelays: [300] } }),
    );
    const p = await spawnLatchkey({
      DATABASE_URL: server.db.url,
      LATCHKEY_SECRET: server.ctx.config.secret!,
      PUBLIC_URL: server.ctx.config.publicUrl,
      LATCHKEY_CONFIG: file,
    });
    processes.push(p);
    return p;
  }

  test('the second process delivers the notice the killed one held, once its lease runs out', async () => {
    const userId = await server.user('kit', 'kit-password-1');
    const app = await server.client({ scopes: ['openid'], backchannelLogoutUri: receiver.uri });
    const browser = new Browser(server);
    const { code } = await obtainCode(browser, app, 'kit', 'kit-password-1', { scope: 'openid' });
    const { id_token } = (await (await exchangeCode(server, app, code!)).json()) as { id_token: string };
    const sid = sidOf(id_token);

    // The user signs out at the first node; it claims the notice and the receiver holds the POST.
    receiver.mode = 'hang';
    const first = await node();
    const res = await get(`${first.url}/connect/v10/logout`, { id_token_hint: id_token }, { cookie: browser.jar.header() });
    expect(res.status).toBe(200);
    await eventually('the first node is mid-delivery', async () => receiver.waiting > 0);
    await first.kill();

    const [held] = (await server.sql('backchannel_logouts').where({ client_id: app.clientId })) as Array<{
      claimed_until: string | number;
      attempts: number;
    }>;
    expect(held).toBeDefined();
    const claimedUntil = Number(held!.claimed_until);
    expect(claimedUntil).toBeGreaterThan(Date.now() - LEASE);
    expect(Number(held!.attempts)).toBe(0);
    expect(receiver.tokens).toEqual([]);

    // The receiver is back; a second node starts on the same database.
    receiver.mode = 'ok';
    const second = await node();
    await eventually('the second node delivered it', async () => !!receiver.tokenFor(sid), { withinMs: LEASE + 20_000 });
    const claims = await verifyLogoutToken({ url: second.url, ctx: server.ctx }, receiver.tokenFor(sid)!, app.clientId);
    expect(claims).toMatchObject({ sub: userId, sid, aud: app.clientId });

    let delivered: { at: string | number } | undefined;
    await eventually('the delivery is audited', async () => {
      const rows = await server
        .sql('audit_events')
        .where({ kind: 'logout.backchannel_delivered', client_id: app.clientId, user_id: userId });
      delivered = rows.find((r) => String(r.details).includes(sid));
      return !!delivered;
    });
    // Not before the killed node's claim ran out: a live node's claim is never taken over.
    expect(Number(delivered!.at)).toBeGreaterThanOrEqual(claimedUntil);
    await eventually(
      'the queue keeps nothing delivered',
      async () => (await server.sql('backchannel_logouts').where({ client_id: app.clientId })).length === 0,
    );
    expect(receiver.tokens.filter((t) => sidOf(t) === sid)).toHaveLength(1);
  });
});
