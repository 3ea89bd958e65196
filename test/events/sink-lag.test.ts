import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import pg from 'pg';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { advanceClock, resetClock } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';

const HOUR = 3600 * 1000;

/**
 * A stuck event sink no longer pins the audit trail (docs/decisions.md "Events out"): each sink's lag
 * and backlog are in `/metrics`; a sink more than `audit.sinkMaxBacklog` behind skips its oldest
 * events, audited once, and retention purges them; a webhook too slow for its events gives the ones
 * past their retry window up; on PostgreSQL a transaction left open is warned about once.
 */
describe.each(databaseKinds)('event sinks left behind on %s', (kind) => {
  let server: TestServer;
  const webhooks: string[] = [];
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    server = await startTestServer(kind, {
      // A quick poll; a one-minute retry window, so that a slow endpoint falls past it in a few answers.
      webhooks: { pollInterval: 100, retryWindow: 60 },
      audit: { sinkMaxBacklog: 3600 },
      retention: { auditDays: 1 },
    });
  });
  afterEach(async () => {
    for (const id of webhooks.splice(0)) await server.ctx.webhooks.remove(id, CLI_ACTOR);
    for (const close of closers.splice(0)) await close();
    resetClock();
  });
  afterAll(async () => {
    await server?.stop();
    resetClock();
  });

  const record = (n: number | string) => server.ctx.audit.record({ kind: 'login.failure', details: { n } });

  async function register(url: string): Promise<{ id: string; secret: string; sink: string }> {
    const { secret, webhook } = await server.ctx.webhooks.register({ url, events: ['login.failure'] }, CLI_ACTOR);
    webhooks.push(webhook.id);
    return { id: webhook.id, secret, sink: `webhook:${webhook.id}` };
  }

  async function sinkMetrics(sink: string): Promise<{ lag: number; backlog: number }> {
    const families = await scrape(server.url);
    return {
      lag: sample(families, 'latchkey_event_sink_lag_seconds', { sink }),
      backlog: sample(families, 'latchkey_event_sink_backlog', { sink }),
    };
  }

  /** The `msg` of the server's warnings and errors so far. */
  const logged = () => server.logs.map((l) => JSON.parse(l) as { msg: string; level: number } & Record<string, unknown>);

  test('the lag rises while a webhook endpoint is down, and is back at 0 once it answers', async () => {
    const receiver = await WebhookReceiver.start();
    closers.push(() => receiver.close());
    receiver.failNext = 1000;
    const hook = await register(receiver.url);
    receiver.secret = hook.secret;
    expect(await sinkMetrics(hook.sink)).toEqual({ lag: 0, backlog: 0 });

    await record('down');
    await eventually('the first try failed', async () => receiver.arrivals.length >= 1);
    const first = await sinkMetrics(hook.sink);
    expect(first.lag).toBeGreaterThan(0);
    expect(first.backlog).toBeGreaterThanOrEqual(1);

    // Past the first retry's wait (5 s): tried again, failing again, and the event older still.
    advanceClock(6_000);
    await eventually('the second try failed', async () => receiver.arrivals.length >= 2);
    const later = await sinkMetrics(hook.sink);
    expect(later.lag).toBeGreaterThanOrEqual(6);
    expect(later.lag).toBeGreaterThan(first.lag);

    // The endpoint answers again; past the next wait (30 s), still inside the event's one-minute window.
    receiver.failNext = 0;
    advanceClock(31_000);
    await eventually('delivered', async () => receiver.accepted.length === 1);
    await eventually('caught up', async () => {
      const now = await sinkMetrics(hook.sink);
      return now.lag === 0 && now.backlog === 0;
    });
    expect(receiver.accepted[0]!.data.details).toEqual({ n: 'down' });
  });

  test('a webhook that answers, but too slowly for its events, gives up those past their window', async () => {
    // 2xx to every request, taking 30 s of the server's time each: one event at a time, it falls behind.
    const arrivals: string[] = [];
    const port = await freePort();
    const slow: Server = createServer((req, res) => {
      arrivals.push(String(req.headers['webhook-id']));
      req.resume();
      req.on('end', () => {
        advanceClock(30_000);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => slow.listen(port, '127.0.0.1', () => resolve()));
    closers.push(() => new Promise((resolve) => slow.close(() => resolve())));
    const hook = await register(`http://127.0.0.1:${port}/hook`);

    // Five events waiting at once (the worker held back while they are recorded).
    await server.ctx.webhookDeliveries.stop();
    const ids: string[] = [];
    try {
      for (let n = 0; n < 5; n++) {
        await record(`slow-${n}`);
        ids.push(String((await server.sql('audit_events').max({ id: 'id' }))[0]!.id));
      }
    } finally {
      server.ctx.webhookDeliveries.start();
    }

    // The first two are sent within their minute; the next three's minute is over before their turn.
    const givenUp = async () =>
      (await server.sql('audit_events').where({ kind: 'webhook.given_up' }).select('details'))
        .map((r) => JSON.parse(r.details as string) as Record<string, unknown>)
        .filter((d) => d.webhookId === hook.id);
    await eventually('three given up', async () => (await givenUp()).reduce((n, d) => n + Number(d.events), 0) === 3);
    expect(arrivals).toEqual([`evt_${ids[0]}`, `evt_${ids[1]}`]);
    expect((await givenUp())[0]).toMatchObject({
      webhookId: hook.id,
      firstEventId: ids[2],
      attempts: 0,
      error: 'endpoint behind by more than the retry window',
    });
    // Behind, not failing: every answer was a success.
    expect((await server.ctx.webhooks.list()).find((w) => w.id === hook.id)?.failingSince).toBeNull();
    await eventually('caught up', async () => (await sinkMetrics(hook.sink)).backlog === 0);
  });

  test('a sink left behind past audit.sinkMaxBacklog skips ahead, audited once, and retention then purges', async () => {
    const { events, retention } = server.ctx;
    // A sink nobody sends for (as a receiver gone for good leaves the syslog sink); leased by the test
    // for now, so that the server's own check (every 15 s) leaves it alone until the test lets go.
    await events.open('test:stuck');
    closers.push(() => events.close('test:stuck'));
    expect(await events.lease('test:stuck', 26 * HOUR)).toBe(true);
    const old: string[] = [];
    for (let n = 0; n < 3; n++) {
      await record(`old-${n}`);
      old.push(String((await server.sql('audit_events').max({ id: 'id' }))[0]!.id));
    }
    // A day and an hour later: past the one-hour bound, and past a day's retention.
    advanceClock(25 * HOUR);
    await record('young');
    const young = String((await server.sql('audit_events').max({ id: 'id' }))[0]!.id);
    expect((await sinkMetrics('test:stuck')).lag).toBeGreaterThanOrEqual(25 * 3600);

    const present = async (ids: string[]) =>
      (await server.sql('audit_events').whereIn('id', ids).select('id')).map((r) => String(r.id)).sort();
    // Held for the sink, whatever retention says.
    await retention.purgeNow();
    expect(await present(old)).toEqual([...old].sort());

    // A sink whose sender holds its lease is that sender's to check (the syslog sink checks itself).
    expect(await events.skipStaleSinks()).toEqual([]);
    await events.release('test:stuck');
    // On PostgreSQL the events are skipped once readable (no older transaction running on the server).
    const audited = async () =>
      (await server.sql('audit_events').where({ kind: 'event_sink.skipped' }).select('details')).map((a) =>
        JSON.parse(a.details as string),
      );
    await eventually('skipped', async () => {
      await events.skipStaleSinks();
      return (await audited()).length > 0;
    });
    // Checked again: nothing more to skip, nothing audited twice.
    expect(await events.skipStaleSinks()).toEqual([]);
    expect(await audited()).toEqual([{ sink: 'test:stuck', events: 3, firstEventId: old[0], lastEventId: old[2] }]);
    expect(logged().filter((l) => l.msg.startsWith('event sink more than audit.sinkMaxBacklog behind'))).toEqual([
      expect.objectContaining({ level: 50, sink: 'test:stuck', events: 3, maxBacklog: 3600 }),
    ]);

    // The sink goes on from the young event (then the skip's own); retention purges what it skipped.
    let next: Awaited<ReturnType<typeof events.read>> = [];
    await eventually('the rest readable', async () => (next = await events.read('test:stuck', 10)).length >= 2);
    expect(next.map((e) => [e.id, e.kind])).toEqual([
      [young, 'login.failure'],
      [expect.any(String), 'event_sink.skipped'],
    ]);
    expect((await sinkMetrics('test:stuck')).lag).toBeLessThan(3600);
    await retention.purgeNow();
    expect(await present([...old, young])).toEqual([young]);
  });

  test('on PostgreSQL, a transaction left open that holds delivery back is warned about once, with its age', async () => {
    if (kind !== 'postgres') {
      // SQLite commits one writer at a time: nothing holds a committed event back.
      await expect(server.ctx.events.watchHorizon()).resolves.toBeUndefined();
      return;
    }
    const { events } = server.ctx;
    await events.open('test:stall');
    closers.push(() => events.close('test:stall'));
    const open = new pg.Client({ connectionString: server.db.url });
    await open.connect();
    closers.push(() => open.end());
    // A transaction with an id, left open (a session idle in transaction after a write).
    await open.query('begin');
    await open.query('select pg_current_xact_id()');
    await record('held');
    expect(await events.read('test:stall', 10)).toEqual([]);

    advanceClock(2 * 60_000);
    const warnings = () => logged().filter((l) => l.msg.startsWith('audit events held back'));
    const before = warnings().length;
    await events.watchHorizon();
    expect(warnings().length).toBe(before + 1);
    expect(warnings().at(-1)).toMatchObject({ level: 40, heldBackSeconds: expect.any(Number) });
    expect(Number(warnings().at(-1)!.heldBackSeconds)).toBeGreaterThanOrEqual(120);
    // Once per stall, not per look.
    await events.watchHorizon();
    await events.watchHorizon();
    expect(warnings().length).toBe(before + 1);
    // The held event counts in the sink's lag.
    expect((await sinkMetrics('test:stall')).lag).toBeGreaterThanOrEqual(120);

    await open.query('rollback');
    await eventually('delivered once the transaction ended', async () => (await events.read('test:stall', 10)).length > 0);
  });
});
