import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { eventually } from '../helpers/eventually.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

interface LatchkeyEvent {
  type: string;
  data: { id: string; kind: string; details: Record<string, unknown> | null };
}

/** The receiver of docs/webhooks.md "Verifying signatures", as printed there, against a real server. */
describe('the webhook receiver of docs/webhooks.md, as printed there', () => {
  const file = fileURLToPath(new URL(`./.docs-webhook-${process.pid}.ts`, import.meta.url));
  let server: TestServer;
  let site: Server;
  let port: number;
  const handled: LatchkeyEvent[] = [];

  beforeAll(async () => {
    const page = readFileSync(fileURLToPath(new URL('../../docs/webhooks.md', import.meta.url)), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(page.slice(page.indexOf('## Verifying signatures')));
    if (!block) throw new Error('docs/webhooks.md: no ts block under "Verifying signatures"');
    writeFileSync(file, block[1]!);
    const { latchkeyWebhook } = (await import(file)) as {
      latchkeyWebhook: (secret: string, handle: (e: LatchkeyEvent) => Promise<void>) => express.Router;
    };
    server = await startTestServer('sqlite', { webhooks: { pollInterval: 100 } });
    port = await freePort();
    const token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const res = await graphqlPost(
      server,
      token,
      'mutation($url: String!) { registerWebhook(url: $url, events: ["admin.change"]) { secret } }',
      { url: `http://127.0.0.1:${port}/hooks/latchkey` },
    );
    const { secret } = res.data!.registerWebhook as { secret: string };
    const app = express().use(latchkeyWebhook(secret, async (e) => void handled.push(e)));
    await new Promise<void>((resolve) => (site = app.listen(port, '127.0.0.1', () => resolve())));
  });
  afterAll(async () => {
    rmSync(file, { force: true });
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
    await server?.stop();
  });

  test('it handles each signed event once and refuses an unsigned one', async () => {
    await server.user('uma', 'uma-password-1');
    await eventually('the receiver handled the admin change', async () => handled.length === 1);
    expect(handled[0]).toMatchObject({ type: 'admin.change', data: { kind: 'admin.change', details: { action: 'user.create' } } });

    const url = `http://127.0.0.1:${port}/hooks/latchkey`;
    const body = JSON.stringify({ type: 'admin.change', timestamp: new Date().toISOString(), data: {} });
    const headers = {
      'content-type': 'application/json',
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    };
    const forged = await fetch(url, { method: 'POST', headers: { ...headers, 'webhook-signature': 'v1,bm90IGEgc2lnbmF0dXJl' }, body });
    expect(forged.status).toBe(400);
    expect(handled).toHaveLength(1);
  });
});
