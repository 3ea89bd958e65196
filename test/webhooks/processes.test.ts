import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { eventually } from '../helpers/eventually.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';

/**
 * Webhook delivery by any process (docs/webhooks.md "Retries and order"): two servers on one database
 * send an endpoint each event once and in order, and an endpoint held by a process that died goes to
 * another once its lease runs out.
 */
describe('webhooks delivered by several processes (postgres)', () => {
  let first: TestServer;
  let second: RunningServer;
  let receiver: WebhookReceiver;
  let webhookId: string;

  beforeAll(async () => {
    first = await startTestServer('postgres', { webhooks: { pollInterval: 50 } });
    const c = first.ctx.config;
    const config = loadConfig(
      { LATCHKEY_CONFIG: undefined },
      {
        port: await freePort(),
        host: '127.0.0.1',
        publicUrl: c.publicUrl,
        databaseUrl: first.db.url,
        // The same secret: the other process unseals the signing secret the first one sealed.
        secret: c.secret,
        admin: c.admin,
        webhooks: c.webhooks,
      },
    );
    second = await startServer(config, pino({ level: 'silent' }));
    receiver = await WebhookReceiver.start();
    const token = (await adminCliToken(first, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const res = await graphqlPost(
      first,
      token,
      'mutation($url: String!) { registerWebhook(url: $url, events: ["login.*"]) { secret webhook { id } } }',
      { url: receiver.url },
    );
    const made = res.data!.registerWebhook as { secret: string; webhook: { id: string } };
    receiver.secret = made.secret;
    webhookId = made.webhook.id;
  });
  afterAll(async () => {
    await second?.close();
    await first?.stop();
    await receiver?.close();
  });

  /** `n` events recorded by each of the two processes, interleaved. */
  async function record(n: number, from: number): Promise<void> {
    for (let i = from; i < from + n; i++) {
      await (i % 2 ? first : second).ctx.audit.record({ kind: 'login.failure', details: { n: i } });
    }
  }

  test('two processes running send every event once, in order', async () => {
    await record(40, 0);
    await eventually('all 40 delivered', async () => receiver.accepted.length === 40);
    expect(receiver.unverified).toEqual([]);
    expect(receiver.accepted.map((m) => m.data.details?.n)).toEqual([...Array(40).keys()]);
    // Each once: no event was sent by both.
    expect(new Set(receiver.arrivals).size).toBe(receiver.arrivals.length);
  });

  test('an endpoint held by a process that died goes to another when its lease runs out', async () => {
    const sink = `webhook:${webhookId}`;
    await eventually('idle', async () => (await first.sql('event_sinks').where({ name: sink }).first())?.lease_holder === null);
    const until = Date.now() + 1500;
    await first.sql('event_sinks').where({ name: sink }).update({ lease_holder: 'a-process-that-died', lease_until: until });
    await record(3, 100);
    await eventually('the three delivered', async () => receiver.accepted.length === 43);
    expect(receiver.arrivedAt[40]).toBeGreaterThanOrEqual(until);
    expect(receiver.accepted.slice(40).map((m) => m.data.details?.n)).toEqual([100, 101, 102]);
  });
});
