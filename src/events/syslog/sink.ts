import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { clock } from '../../clock.ts';
import { SYSLOG_FACILITIES, type Config } from '../../config/schema.ts';
import { projectRoot } from '../../root.ts';
import type { EventPosition } from '../model.ts';
import { BOUND_CHECK_MS, positionAfter, type EventOutbox } from '../outbox.ts';
import { formatCef } from './format-cef.ts';
import { formatRfc5424, type MessageOrigin } from './format-rfc5424.ts';
import { openSyslog, parseSyslogUrl, reasonOf, type SyslogSocket, type SyslogTarget } from './transport.ts';

/** The sink's name in the queue (its cursor and lease). */
export const SYSLOG_SINK = 'syslog';

/** How the sink paces itself. */
interface SyslogSinkTimes {
  /** How long a written event must stay on a connection still open before it counts as delivered (`confirmAfter`). */
  settleMs: number;
  /** Between looks at the queue when it is empty. */
  pollMs: number;
  /** The longest wait between reconnection attempts; they start at 0.5 s and double up to it. */
  maxBackoffMs: number;
  connectTimeoutMs: number;
  leaseMs: number;
  /** How long a clean stop waits for the receiver to close its side. */
  finishMs: number;
}

const TIMES: Omit<SyslogSinkTimes, 'settleMs'> = {
  pollMs: 500,
  maxBackoffMs: 30_000,
  connectTimeoutMs: 10_000,
  leaseMs: 30_000,
  finishMs: 3000,
};
/** Events read and written at once. */
const BATCH = 200;

export interface SyslogSink {
  start(): Promise<void>;
  /** Stops sending; what was written is confirmed by closing the connection cleanly. */
  stop(): Promise<void>;
}

type SyslogConfig = NonNullable<Config['audit']['syslog']>;

export function targetOf(config: SyslogConfig): SyslogTarget {
  const where = parseSyslogUrl(config.url);
  if (!where) throw new Error('audit.syslog.url: not tcp://host[:port] or tls://host[:port]');
  if (where.protocol === 'tcp') return where;
  const { ca, cert, key, rejectUnauthorized } = config.tls;
  return { ...where, tls: { ca, cert, key, rejectUnauthorized } };
}

const version = (): string => {
  try {
    return (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version?: string }).version ?? '0';
  } catch {
    return '0';
  }
};

/**
 * The sink for `audit.syslog`; without it, one that forgets the sink's cursor at start, so that
 * retention stops keeping events for a receiver nobody sends to any more.
 */
export function syslogSinkFor(config: Config, outbox: EventOutbox, logger: Logger): SyslogSink {
  if (config.audit.syslog) return syslogSink(config.audit.syslog, outbox, logger);
  return {
    start: () => outbox.close(SYSLOG_SINK).catch((err: Error) => logger.error({ err: err.message }, 'syslog sink not closed')),
    stop: async () => undefined,
  };
}

/**
 * Sends every audit event to the SIEM's syslog receiver, in the queue's order, at least once
 * (docs/audit-to-siem.md "Delivery"). TCP tells the sender nothing about what the receiver got, so an
 * event counts as delivered once it was written and the connection then stayed open for
 * `confirmAfter`: a receiver that stops, restarts or crashes closes or resets its connections, and
 * everything written within the last `confirmAfter` before that (and everything after) is sent again,
 * in order, on the next connection. A receiver may see an event twice (its `eventId` tells), never
 * miss one (within docs/audit-to-siem.md "The limit of plain TCP") or see one before those recorded
 * before it. A clean stop half-closes the connection and waits for the receiver to close its side,
 * which it does only after reading all of it, so a restart of Latchkey sends nothing twice.
 *
 * Not the shared delivery loop of src/outbound/delivery-loop.ts: that one claims items and finishes
 * each on its own, where this keeps one connection open and confirms a window of events on it.
 */
export function syslogSink(config: SyslogConfig, outbox: EventOutbox, logger: Logger): SyslogSink {
  const t: SyslogSinkTimes = { ...TIMES, settleMs: config.confirmAfter * 1000 };
  const target = targetOf(config);
  const origin: MessageOrigin = {
    facility: typeof config.facility === 'number' ? config.facility : SYSLOG_FACILITIES[config.facility],
    enterpriseId: config.enterpriseId,
    hostname: hostname(),
    procId: String(process.pid),
    version: version(),
  };
  const format = config.format === 'cef' ? formatCef : formatRfc5424;
  const where = `${target.protocol}://${target.host}:${target.port}`;

  let stopped = true;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let socket: SyslogSocket | undefined;
  let leased = false;
  let leaseRenewAt = 0;
  /** Written on `socket`, not yet confirmed: oldest first, with when each write was handed over. */
  let unconfirmed: Array<{ position: EventPosition; writtenAt: number }> = [];
  /** The last event written on `socket` (undefined: none yet, read from the queue's cursor). */
  let sentUpTo: EventPosition | undefined;
  let backoff = 0;
  let retryAt = 0;
  let outageSince: number | undefined;
  /** When the sink is next checked against `audit.sinkMaxBacklog` (the server's time). */
  let boundCheckAt = 0;

  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(tick, ms).unref();
  };

  /** Drops the connection: what it did not confirm goes again on the next one, after the queue's cursor. */
  function drop(): void {
    const s = socket;
    socket = undefined;
    s?.destroy();
    unconfirmed = [];
    sentUpTo = undefined;
  }

  /** The receiver closed the connection, or it failed. */
  function lost(reason: string): void {
    const resend = unconfirmed.length;
    drop();
    if (outageSince !== undefined) return;
    outageSince = Date.now();
    logger.warn(
      { syslog: where, reason, resend },
      'syslog connection lost; the events wait in the queue and are sent again on reconnection',
    );
  }

  async function connect(): Promise<boolean> {
    if (Date.now() < retryAt) return false;
    try {
      const s = await openSyslog(target, t.connectTimeoutMs);
      s.onClose((reason) => {
        if (socket === s) lost(reason);
      });
      socket = s;
      backoff = 0;
      if (outageSince !== undefined) logger.info({ syslog: where, downForMs: Date.now() - outageSince }, 'syslog receiver reachable again');
      outageSince = undefined;
      return true;
    } catch (err) {
      backoff = Math.min(t.maxBackoffMs, backoff ? backoff * 2 : 500);
      retryAt = Date.now() + backoff;
      if (outageSince === undefined) {
        outageSince = Date.now();
        logger.warn({ syslog: where, reason: reasonOf(err) }, 'syslog receiver unreachable; the events wait in the queue');
      }
      // The sink's state shows since when it fails (`failingSince`); the next `ack` clears it.
      await outbox.fail(SYSLOG_SINK, { dueAt: clock.now() + backoff });
      return false;
    }
  }

  /** Confirms, oldest first, the events that have stayed on the open connection for `settleMs`. */
  async function confirm(): Promise<void> {
    const now = Date.now();
    let through: EventPosition | undefined;
    while (socket?.open && unconfirmed.length > 0 && unconfirmed[0]!.writtenAt + t.settleMs <= now) through = unconfirmed.shift()!.position;
    if (through && !(await outbox.ack(SYSLOG_SINK, through))) {
      // Another process took the sink over: it sends from the cursor; this one stands by.
      leased = false;
      drop();
    }
  }

  /**
   * Skips what is older than `audit.sinkMaxBacklog` (docs/audit-to-siem.md "Delivery"), connected or
   * not: this sink holds its lease while the receiver is down, so nobody else does it. What was written
   * and is now skipped is no longer confirmed (the cursor is past it); what follows stays as it was.
   */
  async function checkBound(): Promise<void> {
    if (clock.now() < boundCheckAt) return;
    boundCheckAt = clock.now() + BOUND_CHECK_MS;
    const skipped = await outbox.skipStale(SYSLOG_SINK);
    if (!skipped) return;
    unconfirmed = unconfirmed.filter((u) => positionAfter(u.position, skipped.through));
    if (sentUpTo && !positionAfter(sentUpTo, skipped.through)) sentUpTo = undefined;
  }

  /** One step; the time until the next. */
  async function pass(): Promise<number> {
    if (!leased || Date.now() >= leaseRenewAt) {
      const had = leased;
      leased = await outbox.lease(SYSLOG_SINK, t.leaseMs);
      leaseRenewAt = Date.now() + t.leaseMs / 3;
      if (!leased) {
        if (had) drop();
        return t.leaseMs / 3;
      }
    }
    await checkBound();
    if (!socket && !(await connect())) return Math.max(retryAt - Date.now(), 0);
    await confirm();
    const s = socket;
    if (!s?.open) return 0;
    const events = sentUpTo ? await outbox.readAfter(sentUpTo, BATCH) : await outbox.read(SYSLOG_SINK, BATCH);
    if (events.length > 0) {
      // A failed write closes its connection: `lost` resets the window, and the events go again on the next.
      const written = await s.write(events.map((e) => format(e, origin))).then(
        () => true,
        () => false,
      );
      if (!written || socket !== s || !s.open) return 0;
      const writtenAt = Date.now();
      for (const e of events) unconfirmed.push({ position: e.position, writtenAt });
      sentUpTo = events[events.length - 1]!.position;
    }
    if (events.length === BATCH) return 0;
    if (unconfirmed.length > 0) return Math.max(0, Math.min(t.pollMs, unconfirmed[0]!.writtenAt + t.settleMs - Date.now()));
    return t.pollMs;
  }

  function tick(): void {
    if (stopped || running) return;
    running = pass()
      .then(schedule, (err: unknown) => {
        logger.error({ err: reasonOf(err) }, 'syslog queue not read');
        schedule(t.pollMs);
      })
      .finally(() => {
        running = undefined;
      });
  }

  return {
    async start() {
      if (!stopped) return;
      // A new sink starts at the stream's end; one that exists keeps its place (events recorded while
      // Latchkey was down, or while the receiver was, are sent now).
      await outbox.open(SYSLOG_SINK);
      stopped = false;
      schedule(0);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      // A write to a receiver that stopped reading waits for it: cut it after a moment (its events go again).
      const late = setTimeout(() => drop(), t.finishMs);
      await running;
      clearTimeout(late);
      const s = socket;
      const last = unconfirmed.at(-1)?.position;
      socket = undefined;
      unconfirmed = [];
      sentUpTo = undefined;
      // The receiver closes its side only after reading everything before our end: then all of it arrived.
      const read = s ? await s.finish(t.finishMs) : false;
      if (read && last && leased) await outbox.ack(SYSLOG_SINK, last).catch(() => undefined);
      if (leased) await outbox.release(SYSLOG_SINK).catch(() => undefined);
      leased = false;
    },
  };
}
