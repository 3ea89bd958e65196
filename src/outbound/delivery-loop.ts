import type { Logger } from 'pino';
import { clock } from '../clock.ts';

/** What one kind of queued delivery supplies to the loop that runs it. */
export interface DeliverySpec<T> {
  /** For the log lines: "back-channel logout", "webhook", … */
  what: string;
  /** How often each process looks for due work, besides what it queues itself (ms). */
  pollInterval: number;
  /**
   * Claims up to `limit` due items, each with a lease the caller's queries take (a claim left by a
   * process that died expires, so another takes it); `now` is the server's time.
   */
  claim(now: number, limit: number): Promise<T[]>;
  /**
   * Delivers (or tries) one claimed item and records the outcome, releasing its claim. The signal
   * aborts at shutdown: the item is then to be released untried. Resolves to the milliseconds after
   * which it is due again when it asked for a retry, so this process looks again then.
   */
  deliver(item: T, signal: AbortSignal): Promise<number | undefined>;
  /** The fields naming an item in a log line (never a secret). */
  describe(item: T): Record<string, unknown>;
  logger: Logger;
  /** Items a process takes at once. @default 20 */
  batch?: number;
}

export interface DeliveryWorker {
  start(): void;
  /** Work was queued in this process: look now, after the current request's answer. */
  kick(): void;
  /** Stops claiming; deliveries under way are cut (their items released by `deliver`), then it resolves. */
  stop(): Promise<void>;
}

/**
 * The claim, retry and stop loop of every queued delivery (back-channel logout notices, SAML logout by
 * SOAP, webhooks): one claim at a time per process, a poll every `pollInterval`, a wake-up when an item
 * asked to be retried, up to `batch` deliveries under way at once (each in the background, so one that
 * hangs to its timeout keeps its slot only, and a freed slot claims again), and a stop that cuts what
 * is under way.
 * What is queued and how it is claimed, sent and recorded is the caller's; every process runs one loop
 * per kind, and the claims keep two processes from sending the same item.
 */
export function deliveryLoop<T>(spec: DeliverySpec<T>): DeliveryWorker {
  const { logger, what } = spec;
  const batch = spec.batch ?? 20;
  let stopped = true;
  let running: Promise<void> | undefined;
  let again = false;
  let poll: NodeJS.Timeout | undefined;
  const timers = new Set<NodeJS.Timeout>();
  /** Deliveries under way: at most `batch` at once. */
  const inflight = new Set<Promise<void>>();
  let stopping = new AbortController();

  const later = (ms: number) => {
    const t = setTimeout(() => {
      timers.delete(t);
      run();
    }, ms).unref();
    timers.add(t);
  };

  /** One item, in the background: a slow one holds its own slot only, and a freed slot looks for more. */
  function launch(item: T): void {
    const delivery = (async () => {
      try {
        const retryIn = await spec.deliver(item, stopping.signal);
        if (retryIn !== undefined && !stopping.signal.aborted) later(retryIn);
      } catch (err) {
        logger.error({ err: (err as Error).message, ...spec.describe(item) }, `${what} failed`);
      }
    })().finally(() => {
      inflight.delete(delivery);
      run();
    });
    inflight.add(delivery);
  }

  async function runOnce(): Promise<void> {
    const room = batch - inflight.size;
    if (room <= 0) return;
    const claimed = await spec.claim(clock.now(), room);
    for (const item of claimed) launch(item);
    // Every free slot filled: there may be more due once one frees.
    if (claimed.length === room) again = true;
  }

  function run(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = runOnce()
      .catch((err: Error) => logger.error({ err: err.message }, `${what} queue not read`))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          run();
        }
      });
  }

  return {
    start(): void {
      if (!stopped) return;
      stopped = false;
      stopping = new AbortController();
      poll = setInterval(run, spec.pollInterval).unref();
      run();
    },

    kick(): void {
      if (!stopped) setImmediate(run);
    },

    async stop(): Promise<void> {
      stopped = true;
      clearInterval(poll);
      for (const t of timers) clearTimeout(t);
      timers.clear();
      stopping.abort();
      await running;
      await Promise.all(inflight);
    },
  };
}

/**
 * The wait before the next try after `attempts` failed ones, from a list of waits; undefined when the
 * list has run out (the item is given up).
 */
const retryDelay = (delays: readonly number[], attempts: number): number | undefined =>
  attempts >= 1 && attempts <= delays.length ? delays[attempts - 1] : undefined;

/** An item of a delivery queue (src/outbound/delivery-queue-queries.ts), as settling a try of it takes it. */
interface Settled {
  id: string;
  /** The tries made before this one. */
  attempts: number;
}

/** The audit event of an item delivered or given up: the details gain `attempts`, and a give-up's `error`. */
export interface SettledEvent<K extends string> {
  kind: K;
  userId: string;
  clientId: string;
  details: Record<string, unknown>;
}

/** What one kind of queued delivery supplies to settle its tries. */
export interface SettleSpec<K extends string> {
  /** As the loop's `what`: "back-channel logout", … */
  what: string;
  /** The queue's own (src/outbound/delivery-queue-queries.ts). */
  queue: {
    remove(id: string): Promise<void>;
    retryAt(id: string, attempts: number, dueAt: number): Promise<void>;
  };
  /** The waits between tries; when they have run out the item is given up. */
  delays: readonly number[];
  /** The audit event kinds of an item delivered and of one given up. */
  kinds: { delivered: K; failed: K };
  /** The worker's audit log: the worker's service owns its events, this only writes them. */
  audit: { record(e: SettledEvent<NoInfer<K>>): Promise<void> };
  logger: Logger;
}

/** What a try came to, and how its item is named in the audit event and the log. */
export interface Tried {
  /** Undefined when delivered; else the fixed reason (outbound-error.ts): never what the receiver said. */
  error: string | undefined;
  /** The audit event's subject. */
  event: { userId: string; clientId: string };
  /** The audit event's details (never a secret), before `attempts` and `error`. */
  details: Record<string, unknown>;
  /** The fields naming the receiver in a retry's log line (never a secret). */
  names: Record<string, unknown>;
}

/**
 * How the queued deliveries of the logout workers finish a try, for `deliver` to return: a try cut
 * short by shutdown releases its item untried; a delivered item, or one out of retries, is removed and
 * audited; any other is due again after the next wait, which is returned for the loop to look again.
 */
export function deliverySettler<K extends string>(spec: SettleSpec<K>) {
  const { queue, audit, logger } = spec;
  return async (item: Settled, signal: AbortSignal, tried: Tried): Promise<number | undefined> => {
    if (signal.aborted) {
      // Cut short by shutdown: not a try; released for this or another process.
      return void (await queue.retryAt(item.id, item.attempts, clock.now()));
    }
    const { error, event, details, names } = tried;
    const attempts = item.attempts + 1;
    const wait = retryDelay(spec.delays, attempts);
    if (!error) {
      await queue.remove(item.id);
      await audit.record({ kind: spec.kinds.delivered, ...event, details: { ...details, attempts } });
    } else if (wait === undefined) {
      await queue.remove(item.id);
      await audit.record({ kind: spec.kinds.failed, ...event, details: { ...details, attempts, error } });
    } else {
      logger.info({ ...names, attempts, error }, `${spec.what} not delivered; will retry`);
      await queue.retryAt(item.id, attempts, clock.now() + wait);
      return wait;
    }
    return undefined;
  };
}
