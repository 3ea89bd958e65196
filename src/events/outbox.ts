/**
 * The durable queue of audit events going out, to the webhooks (src/webhooks/) and the syslog sink
 * (docs/decisions.md "Events out").
 *
 * How it works. The queue is the audit trail itself: an event is queued by the insert that records
 * it, so it is queued in the same transaction as the act it records, at no cost to a sign-in (no extra
 * row). Events are read in stream order, (txid, id): on PostgreSQL `txid` is the id of the transaction
 * that recorded the event, and only events of transactions older than every one still running are
 * read, so an event a slower transaction commits later never lands behind a sink's cursor; on SQLite,
 * whose writers commit one at a time, it is 0 and the id alone orders. Each sink keeps a cursor (the
 * position of the last event it is done with) in `event_sinks`; retention never purges an event a sink
 * has not passed.
 *
 * The interface, for a sink (one process sends for a sink at a time, holding its lease):
 *
 *   const outbox = ctx.events;                      // EventOutbox, built once by src/services.ts
 *   await outbox.open('syslog');                    // once, at start: the cursor starts at the stream's
 *                                                   //   end (no-op when it exists; keeps its place)
 *   if (await outbox.lease('syslog', 30_000)) {     // this process sends for the sink (renew before it runs out)
 *     const batch = await outbox.read('syslog', 200);   // OutgoingEvent[] after the cursor, in order
 *     // … send them, in order …
 *     await outbox.ack('syslog', batch.at(-1)!.position); // done with them: the cursor moves (false: lease lost)
 *   }
 *   await outbox.fail('syslog', { dueAt: now + wait });   // or: not sent, try again then (failingSince kept)
 *   await outbox.release('syslog');                 // at stop: another process may take over at once
 *   await outbox.close('syslog');                   // the sink is gone for good: retention stops keeping events for it
 *
 * Delivery is at least once: a process that dies after sending and before `ack` leaves the events to
 * be sent again by the next holder. Every event reaches every sink in stream order.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { clock } from '../clock.ts';
import type { OutboxQueries } from './outbox-queries.ts';
import type { EventPosition, OutgoingEvent, SinkState, SinkUpdate } from './model.ts';

export interface EventOutbox {
  /** This process's name in the leases it takes. */
  readonly holder: string;
  /** Makes the sink's cursor at the stream's end, unless it exists (then it keeps its place). */
  open(sink: string): Promise<void>;
  /** Forgets the sink: its cursor and lease go, and retention no longer keeps events for it. */
  close(sink: string): Promise<void>;
  /** The sink's cursor and retry state; undefined when it was never opened (or closed). */
  state(sink: string): Promise<SinkState | undefined>;
  /** The states of every sink whose name starts with `prefix` (`webhook:`). */
  states(prefix: string): Promise<SinkState[]>;
  /** Takes or renews the sink's lease for `ms`: true when this process holds it now. */
  lease(sink: string, ms: number): Promise<boolean>;
  /** Up to `limit` events after the sink's cursor, in stream order; empty when none (or no such sink). */
  read(sink: string, limit: number): Promise<OutgoingEvent[]>;
  /** Up to `limit` events after `after` (a position read before), in stream order. */
  readAfter(after: EventPosition, limit: number): Promise<OutgoingEvent[]>;
  /** Done with every event up to `through`: the cursor moves there and the failure state clears. False: the lease was lost. */
  ack(sink: string, through: EventPosition): Promise<boolean>;
  /** Not sent: due again at `dueAt`; `failingSince` is set to now unless it is set already. False: the lease was lost. */
  fail(sink: string, retry: { dueAt: number; attempts?: number }): Promise<boolean>;
  /** The general form of `ack` and `fail`, as one write. False: the lease was lost. */
  update(sink: string, change: SinkUpdate): Promise<boolean>;
  /** Lets go of the sink's lease. */
  release(sink: string): Promise<void>;
  /**
   * Claims up to `limit` sinks named `prefix…` that are due, have an event to read, and are leased by
   * nobody: each now leased to this process for `ms` (the webhook worker's claim).
   */
  claimDue(prefix: string, ms: number, limit: number): Promise<SinkState[]>;
}

export function eventOutbox(queries: OutboxQueries): EventOutbox {
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const outbox: EventOutbox = {
    holder,
    open: (sink) => queries.open(sink, clock.now()),
    close: (sink) => queries.remove(sink),
    state: (sink) => queries.find(sink),
    states: (prefix) => queries.list(prefix),
    lease(sink, ms) {
      const now = clock.now();
      return queries.lease(sink, holder, now, now + ms);
    },
    async read(sink, limit) {
      const state = await queries.find(sink);
      return state ? queries.read(state.position, limit) : [];
    },
    readAfter: (after, limit) => queries.read(after, limit),
    ack: (sink, through) => queries.update(sink, holder, { through, attempts: 0, dueAt: 0, failingSince: null }),
    async fail(sink, retry) {
      const state = await queries.find(sink);
      return queries.update(sink, holder, {
        dueAt: retry.dueAt,
        attempts: retry.attempts,
        failingSince: state?.failingSince ?? clock.now(),
      });
    },
    update: (sink, change) => queries.update(sink, holder, change),
    async release(sink) {
      await queries.update(sink, holder, { release: true });
    },
    claimDue(prefix, ms, limit) {
      const now = clock.now();
      return queries.claimDue(prefix, holder, now, now + ms, limit);
    },
  };
  return outbox;
}
