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
 * be sent again by the next holder. Every event reaches every sink in stream order, unless the sink
 * falls more than `audit.sinkMaxBacklog` behind: then its oldest events are skipped (`skipStale`,
 * audited as `event_sink.skipped`), so that a receiver gone for good cannot keep the audit trail from
 * retention forever. A sink that holds its lease while it waits (syslog) skips by itself; `schedule`
 * does it for a sink whose lease nobody holds, and watches what PostgreSQL holds back.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import type { Transaction } from '../db/transaction.ts';
import type { EventSinkLag } from '../metrics/registry.ts';
import type { OutboxQueries } from './outbox-queries.ts';
import {
  WEBHOOK_SINK_PREFIX,
  type EventPosition,
  type OutgoingEvent,
  type SinkState,
  type SinkUpdate,
  type SkippedEvents,
} from './model.ts';

/** How often `schedule` looks at the sinks and at what PostgreSQL holds back (real time). */
const WATCH_MS = 15_000;
/**
 * How often a sink is checked against `audit.sinkMaxBacklog` (the server's time): a sink stuck for
 * good skips this much of the stream at a time, each stretch audited once.
 */
export const BOUND_CHECK_MS = 10 * 60_000;
/** Delivery held back this long by a PostgreSQL transaction is worth a warning (docs/decisions.md "Events out"). */
const STALL_WARN_MS = 60_000;
/** The backlog a scrape counts per sink at most: an index range that stays cheap; the lag tells how far behind. */
export const BACKLOG_CAP = 10_000;
/** How long the bound check holds a sink nobody sends for. */
const SKIP_LEASE_MS = 30_000;

/** Positions in stream order: whether `a` comes after `b`. */
export function positionAfter(a: EventPosition, b: EventPosition): boolean {
  const [at, bt] = [BigInt(a.txid), BigInt(b.txid)];
  return at !== bt ? at > bt : BigInt(a.id) > BigInt(b.id);
}

export interface EventOutboxDeps {
  /** A skip: its audit event and the cursor's move commit together. */
  transaction: Transaction<{ queries: { events: Pick<OutboxQueries, 'skip'> }; audit: Pick<AuditLog, 'record'> }>;
  config: Pick<Config['audit'], 'sinkMaxBacklog'>;
  logger: Logger;
}

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
  /**
   * With the sink's lease held by this process: when the event after its cursor was recorded more than
   * `audit.sinkMaxBacklog` ago, moves the cursor past every event that old (up to the first younger
   * one), audits the stretch once (`event_sink.skipped`) and logs it as an error. Undefined when the
   * sink is within the bound (or its cursor moved meanwhile).
   */
  skipStale(sink: string): Promise<SkippedEvents | undefined>;
  /**
   * The same for every sink whose lease nobody holds (a sender that hangs or is gone), each leased for
   * the moment; not the webhooks, whose worker gives events up by its own rule (src/webhooks/worker.ts).
   */
  skipStaleSinks(): Promise<SkippedEvents[]>;
  /** Every sink's lag (the age of its oldest undelivered event, 0 when caught up) and backlog, for `/metrics`. */
  lags(): Promise<EventSinkLag[]>;
  /**
   * PostgreSQL: warns once per stall when a transaction left open has held events back from every sink
   * for longer than a minute (docs/decisions.md "Events out"); says at info level when it ends.
   */
  watchHorizon(): Promise<void>;
  /** Runs `watchHorizon` every 15 s and `skipStaleSinks` every 10 minutes; returns the function that stops it. */
  schedule(): () => Promise<void>;
}

export function eventOutbox(queries: OutboxQueries, deps: EventOutboxDeps): EventOutbox {
  const { logger } = deps;
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  // The bound check's own name when it leases a sink nobody sends for: were this process's sender for
  // it to wake up meanwhile, its writes (under `holder`) fail instead of moving the cursor back.
  const checker = `${holder}:bound`;
  const boundMs = deps.config.sinkMaxBacklog * 1000;
  /** The horizon (xid) of the stall last warned about; undefined when nothing is held back. */
  let stall: string | undefined;

  async function skip(sink: string, as: string): Promise<SkippedEvents | undefined> {
    const state = await queries.find(sink);
    if (!state) return undefined;
    const cutoff = clock.now() - boundMs;
    // One indexed row first: within the bound (the usual case), that is all a check costs.
    const [head] = await queries.read(state.position, 1);
    if (!head || head.at >= cutoff) return undefined;
    const stale = await queries.stale(state.position, cutoff);
    if (!stale) return undefined;
    const skipped: SkippedEvents = { sink, ...stale };
    const { through: _through, ...details } = skipped;
    const moved = await deps.transaction(async (tx) => {
      // Only from where the cursor was read: of two checks at once, one moves it and audits.
      if (!(await tx.queries.events.skip(sink, as, state.position, stale.through))) return false;
      await tx.audit.record({ kind: 'event_sink.skipped', details });
      return true;
    });
    if (!moved) return undefined;
    logger.error(
      { ...details, maxBacklog: deps.config.sinkMaxBacklog },
      'event sink more than audit.sinkMaxBacklog behind: its oldest events skipped, undelivered (event_sink.skipped)',
    );
    return skipped;
  }

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
    skipStale: (sink) => skip(sink, holder),
    async skipStaleSinks() {
      const skipped: SkippedEvents[] = [];
      for (const s of await queries.list('')) {
        if (s.name.startsWith(WEBHOOK_SINK_PREFIX)) continue;
        const now = clock.now();
        // Cheap first: only a sink whose next event is that old is leased and looked at again.
        const [head] = await queries.read(s.position, 1);
        if (!head || head.at >= now - boundMs) continue;
        // Held: its sender is alive, and checks by itself.
        if (!(await queries.leaseIfFree(s.name, checker, now, now + SKIP_LEASE_MS))) continue;
        try {
          const done = await skip(s.name, checker);
          if (done) skipped.push(done);
        } finally {
          await queries.update(s.name, checker, { release: true });
        }
      }
      return skipped;
    },
    async lags() {
      const now = clock.now();
      return (await queries.backlogs(BACKLOG_CAP)).map((b) => ({
        sink: b.sink,
        lagSeconds: b.oldestAt === null ? 0 : Math.max(0, now - b.oldestAt) / 1000,
        backlog: b.events,
      }));
    },
    async watchHorizon() {
      const held = await queries.heldBack();
      if (!held) {
        if (stall !== undefined)
          logger.info({ xid: stall }, 'audit events flow to the sinks again: the PostgreSQL transaction holding them back ended');
        stall = undefined;
        return;
      }
      const heldMs = clock.now() - held.since;
      if (heldMs < STALL_WARN_MS || stall === held.xid) return;
      stall = held.xid;
      // Who holds it, when PostgreSQL shows this role other sessions (a superuser, pg_read_all_stats).
      const by = await queries.horizonHolder().catch(() => undefined);
      logger.warn(
        { heldBackSeconds: Math.round(heldMs / 1000), xid: held.xid, ...(by ? { holder: by } : {}) },
        'audit events held back from the webhooks and syslog: a PostgreSQL transaction has been left open on the database server; end it (idle_in_transaction_session_timeout ends such sessions; docs/decisions.md "Events out")',
      );
    },
    schedule() {
      let running: Promise<void> | undefined;
      let boundCheckAt = 0;
      const tick = () => {
        if (running) return;
        running = (async () => {
          try {
            await outbox.watchHorizon();
            if (clock.now() >= boundCheckAt) {
              boundCheckAt = clock.now() + BOUND_CHECK_MS;
              await outbox.skipStaleSinks();
            }
          } catch (err) {
            logger.warn({ err: (err as Error).message }, 'event sinks not checked; they are checked again shortly');
          }
        })().finally(() => {
          running = undefined;
        });
      };
      const timer = setInterval(tick, WATCH_MS).unref();
      return async () => {
        clearInterval(timer);
        await running;
      };
    },
  };
  return outbox;
}
