import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import type { OutgoingEvent } from '../../src/events/model.ts';
import { freezeClock, resetClock } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The durable queue of audit events going out (docs/decisions.md "Events out"): every event reaches a
 * sink once and in order, events recorded before the sink opened are not its, a transaction that
 * commits late is never skipped, and retention keeps what a sink has not passed.
 */
describe.each(databaseKinds)('the outbox of audit events on %s', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(async () => {
    await server?.stop();
  });

  const record = (n: number) => server.ctx.audit.record({ kind: 'login.failure', details: { n } });

  /**
   * What the sink reads once `count` events are there. On PostgreSQL a read waits for every transaction
   * older than the events to end, on the whole server (other test files' too): so, eventually.
   */
  async function readSome(sink: string, count: number, limit = 10): Promise<OutgoingEvent[]> {
    let read: OutgoingEvent[] = [];
    await eventually(`${count} events for ${sink}`, async () => (read = await server.ctx.events.read(sink, limit)).length >= count);
    return read;
  }

  test('a sink reads what was recorded after it opened, in order, and its cursor moves with ack', async () => {
    const { events } = server.ctx;
    await record(-1);
    await events.open('test:a');
    expect(await events.lease('test:a', 10_000)).toBe(true);
    for (let n = 0; n < 5; n++) await record(n);
    const first = await readSome('test:a', 3, 3);
    expect(first.map((e) => e.details?.n)).toEqual([0, 1, 2]);
    expect(await events.ack('test:a', first.at(-1)!.position)).toBe(true);
    const rest = await readSome('test:a', 2);
    expect(rest.map((e) => e.details?.n)).toEqual([3, 4]);
    expect(rest[0]!.kind).toBe('login.failure');
    // Opening again keeps the place.
    await events.open('test:a');
    expect((await readSome('test:a', 2)).map((e) => e.details?.n)).toEqual([3, 4]);
    await events.close('test:a');
    expect(await events.read('test:a', 10)).toEqual([]);
  });

  test('an event of a transaction that commits later is read before the cursor passes it', async () => {
    if (kind !== 'postgres') {
      // SQLite commits one writer at a time, in id order: no later commit can land behind a cursor.
      return;
    }
    const { events } = server.ctx;
    await events.open('test:late');
    await events.lease('test:late', 10_000);
    const slow = new pg.Client({ connectionString: server.db.url });
    await slow.connect();
    try {
      await slow.query('begin');
      // The slow transaction records first (its id is the lower), and commits last.
      await slow.query('insert into audit_events (at, kind, details) values (1, \'login.failure\', \'{"n":"slow"}\')');
      await record(100);
      // The quick one is committed, but an event may still come before it: not read yet.
      expect(await events.read('test:late', 10)).toEqual([]);
      await slow.query('commit');
      const read = await readSome('test:late', 2);
      expect(read.map((e) => e.details?.n)).toEqual(['slow', 100]);
    } finally {
      await slow.end();
      await events.close('test:late');
    }
  });

  test("a client_credentials summary another process adds to goes out again, with the minute's total", async () => {
    const { events, tokenAudit } = server.ctx;
    const { clientId } = await server.client({ grantTypes: ['client_credentials'] });
    await events.open('test:sum');
    await events.lease('test:sum', 10_000);
    freezeClock();
    try {
      const issue = () => tokenAudit.count({ kind: 'token.issued', clientId, details: { grant: 'client_credentials' } });
      const summaries = async () => (await readSome('test:sum', 1)).filter((e) => e.kind === 'token.issued');
      await issue();
      await issue();
      await tokenAudit.flush(true);
      const [first] = await summaries();
      expect(first!.details).toMatchObject({ count: 2 });
      await events.ack('test:sum', first!.position);
      // Another count of the same minute (as another process's would be) adds to the row.
      for (let i = 0; i < 3; i++) await issue();
      await tokenAudit.flush(true);
      const [again] = await summaries();
      expect(again!.details).toMatchObject({ count: 5 });
      expect(Number(again!.id)).toBeGreaterThan(Number(first!.id));
      // Still one event for the minute in the audit trail.
      expect(await server.sql('audit_events').where({ kind: 'token.issued', client_id: clientId }).count({ n: '*' })).toEqual([
        { n: kind === 'postgres' ? '1' : 1 },
      ]);
    } finally {
      resetClock();
      await events.close('test:sum');
    }
  });

  test('retention keeps the events a sink has not passed', async () => {
    const { events } = server.ctx;
    await events.open('test:keep');
    await events.lease('test:keep', 10_000);
    await record(200);
    const [kept] = await readSome('test:keep', 1, 1);
    // Old enough to purge (audit events are kept 90 days), were it not for the sink.
    const old = Date.now() - 200 * 24 * 3600 * 1000;
    await server.sql('audit_events').update({ at: old });
    await server.ctx.retention.purgeNow();
    expect((await server.sql('audit_events').select('id')).map((r) => String(r.id))).toEqual([kept!.id]);
    await events.ack('test:keep', kept!.position);
    await server.ctx.retention.purgeNow();
    expect(await server.sql('audit_events').count({ n: '*' })).toEqual([{ n: kind === 'postgres' ? '0' : 0 }]);
    await events.close('test:keep');
  });
});
