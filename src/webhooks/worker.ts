import type { Logger } from 'pino';
import type { AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { decrypt } from '../crypto/secrets.ts';
import type { Transaction } from '../db/transaction.ts';
import { WEBHOOK_SINK_PREFIX, type EventPosition, type OutgoingEvent, type SinkState } from '../events/model.ts';
import type { EventOutbox } from '../events/outbox.ts';
import type { OutboxQueries } from '../events/outbox-queries.ts';
import type { AddressRules } from '../outbound/address-rules.ts';
import { deliveryLoop, type DeliveryWorker } from '../outbound/delivery-loop.ts';
import { outboundFetch } from '../outbound/fetch.ts';
import { outboundReason } from '../outbound/outbound-error.ts';
import type { Webhook } from './model.ts';
import { kindMatches } from './patterns.ts';
import { signedHeaders } from './signature.ts';
import type { WebhookQueries } from './webhook-queries.ts';

/** Per delivery (docs/webhooks.md "Retries and order"). */
const TIMEOUT_MS = 10_000;
/** Events read from the queue at once. */
const READ = 100;
/**
 * How long one claim of an endpoint sends before it lets others (and this process's other endpoints)
 * have a turn; within the claim's lease, with a delivery's time to spare, so no turn outlives its lease.
 */
const TURN_MS = 20_000;
/** The error of an event given up without a try: the endpoint had failed all through the event's retry window. */
const FAILING_ALL_ALONG = 'endpoint failing all through the retry window';
/**
 * The error of an event given up without a try whose window ended while it waited behind others: the
 * endpoint failed only after it was recorded, or answers too slowly for the events (2xx each, one at a
 * time), and falls behind.
 */
const FELL_BEHIND = 'endpoint behind by more than the retry window';

export interface WebhookWorkerDeps {
  outbox: EventOutbox;
  queries: Pick<WebhookQueries, 'findForDelivery' | 'record'>;
  /** A give-up: its audit event, the deliveries' record and the cursor commit together. */
  transaction: Transaction<{
    queries: { webhooks: Pick<WebhookQueries, 'record'>; events: Pick<OutboxQueries, 'update'> };
    audit: Pick<AuditLog, 'record'>;
  }>;
  /** Unseals the signing secrets. */
  secretKey: Buffer;
  config: Config;
  logger: Logger;
  /** Addresses never called (docs/decisions.md "Outbound fetches"): an endpoint there fails at connect time. */
  outbound: AddressRules;
}

interface Outcome {
  ok: boolean;
  httpStatus: number | null;
  /** Fixed words (src/outbound/), never what the endpoint answered; null when delivered. */
  error: string | null;
}

/** An event given up, with the try that failed last (none: given up untried). */
interface GivenUp {
  event: OutgoingEvent;
  attempt: number;
  httpStatus: number | null;
  error: string;
}

/** The JSON body (Standard Webhooks: `type`, `timestamp`, `data`): the audit event, as `auditEvents` shows it. */
export function webhookBody(e: OutgoingEvent): string {
  const { position: _position, ...event } = e;
  return JSON.stringify({
    type: e.kind,
    timestamp: new Date(e.at).toISOString(),
    data: { ...event, at: new Date(e.at).toISOString() },
  });
}

/**
 * The webhook worker of one process (docs/webhooks.md): claims endpoints that have events waiting
 * (a lease on the endpoint's place in the queue, src/events/), and sends each its events in order, one
 * at a time: the next waits for the previous one's success or give-up. A failed event is tried again
 * after `webhooks.retryDelays` until `webhooks.retryWindow` after it was recorded, then given up and
 * audited (`webhook.given_up`); so is an event whose window ended before its turn, whether the endpoint
 * was failing or only too slow for the events. An endpoint is never told of its own give-ups, which would feed
 * themselves. Off every request: a dead endpoint delays only its own events.
 */
export function webhookWorker(deps: WebhookWorkerDeps): DeliveryWorker {
  const { outbox, queries, config, logger } = deps;
  const { retryDelays: delays, retryWindow, claimLease } = config.webhooks;
  // No longer than any sink may fall behind (docs/decisions.md "Events out"): past it, retention purges.
  const windowMs = Math.min(retryWindow, config.audit.sinkMaxBacklog) * 1000;
  const turnMs = Math.min(TURN_MS, claimLease - TIMEOUT_MS - 1000);

  const wanted = (hook: Webhook, e: OutgoingEvent) =>
    kindMatches(hook.events, e.kind) && !(e.kind.startsWith('webhook.') && e.details?.webhookId === hook.id);

  async function post(hook: Webhook, secret: string, e: OutgoingEvent, signal: AbortSignal): Promise<Outcome> {
    const body = webhookBody(e);
    const headers = signedHeaders(secret, `evt_${e.id}`, Math.floor(clock.now() / 1000), body);
    try {
      const res = await outboundFetch(hook.url, deps.outbound, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Latchkey-Webhooks/1', ...headers },
        body,
        timeoutMs: TIMEOUT_MS,
        maxBytes: 0,
        statusOnly: true,
        signal,
      });
      const ok = res.status >= 200 && res.status < 300;
      return { ok, httpStatus: res.status, error: ok ? null : `HTTP ${res.status}` };
    } catch (err) {
      return { ok: false, httpStatus: null, error: outboundReason(err) };
    }
  }

  /** Records the events given up, one audit event for them all, and moves the cursor past them (and past `through`). */
  async function giveUp(hook: Webhook, sink: string, given: GivenUp[], through: EventPosition, failingSince: number | null): Promise<void> {
    const now = clock.now();
    const [head, last] = [given[0]!, given.at(-1)!];
    await deps.transaction(async (tx) => {
      for (const g of given) {
        await tx.queries.webhooks.record({
          webhookId: hook.id,
          eventId: g.event.id,
          kind: g.event.kind,
          attempt: g.attempt,
          status: 'given_up',
          httpStatus: g.httpStatus,
          error: g.error,
          at: now,
        });
      }
      await tx.audit.record({
        kind: 'webhook.given_up',
        details: {
          webhookId: hook.id,
          events: given.length,
          firstEventId: head.event.id,
          lastEventId: last.event.id,
          attempts: head.attempt,
          error: head.error,
        },
      });
      if (!(await tx.queries.events.update(sink, outbox.holder, { through, attempts: 0, dueAt: 0, failingSince }))) {
        throw new Error('the endpoint was taken over by another process');
      }
    });
    logger.warn({ webhookId: hook.id, events: given.length, error: head.error }, 'webhook events given up');
  }

  /** One turn at one endpoint; the milliseconds until its head event is due again when it failed. */
  async function deliver(claimed: SinkState, signal: AbortSignal): Promise<number | undefined> {
    const sink = claimed.name;
    const found = await queries.findForDelivery(sink.slice(WEBHOOK_SINK_PREFIX.length));
    // Deleted since: its place in the queue goes with it (the deletion removed it; this is a straggler).
    if (!found) return void (await outbox.close(sink));
    const { hook } = found;
    const secret = decrypt(deps.secretKey, found.secretEnc);
    let { position, attempts, failingSince } = claimed;
    /** Events passed over (not wanted, or given up) since the cursor last moved. */
    let passed: EventPosition | undefined;
    let given: GivenUp[] = [];
    const turnEnds = Date.now() + turnMs;

    const settleGivenUp = async () => {
      if (given.length === 0) return;
      // A slow endpoint that answers is behind, not failing: its `failingSince` stays as it is.
      await giveUp(hook, sink, given, passed!, failingSince);
      [position, passed, given, attempts] = [passed!, undefined, [], 0];
    };

    try {
      while (Date.now() < turnEnds && !signal.aborted) {
        const events = await outbox.readAfter(passed ?? position, READ);
        if (events.length === 0) break;
        for (const e of events) {
          if (signal.aborted || Date.now() >= turnEnds) break;
          if (!wanted(hook, e)) {
            passed = e.position;
            continue;
          }
          const now = clock.now();
          const windowEnds = e.at + windowMs;
          // Not tried yet and its window over: it is given up untried. So an endpoint that falls behind,
          // failing or just slow, keeps no more than its window's events from retention.
          if (attempts === 0 && now >= windowEnds) {
            const error = failingSince !== null && failingSince <= e.at ? FAILING_ALL_ALONG : FELL_BEHIND;
            given.push({ event: e, attempt: 0, httpStatus: null, error });
            passed = e.position;
            continue;
          }
          await settleGivenUp();
          const attempt = attempts + 1;
          const outcome = await post(hook, secret, e, signal);
          // Cut short by shutdown: not a try; the endpoint is released below for this or another process.
          if (signal.aborted) break;
          const at = clock.now();
          const record = { webhookId: hook.id, eventId: e.id, kind: e.kind, attempt, httpStatus: outcome.httpStatus, error: outcome.error };
          if (outcome.ok) {
            await queries.record({ ...record, status: 'delivered', at });
            if (!(await outbox.update(sink, { through: e.position, attempts: 0, dueAt: 0, failingSince: null }))) return;
            [position, passed, attempts, failingSince] = [e.position, undefined, 0, null];
            continue;
          }
          failingSince ??= at;
          if (at >= windowEnds) {
            given.push({ event: e, attempt, httpStatus: outcome.httpStatus, error: outcome.error! });
            [passed, attempts] = [e.position, 0];
            continue;
          }
          // Tried again after the next wait (the last one repeats), and once more as its window ends.
          const dueAt = Math.min(at + delays[Math.min(attempt, delays.length) - 1]!, windowEnds);
          await queries.record({ ...record, status: 'failed', at });
          await queries.record({ ...record, attempt: attempt + 1, status: 'pending', httpStatus: null, error: null, at: dueAt });
          logger.info({ webhookId: hook.id, eventId: e.id, attempt, error: outcome.error }, 'webhook not delivered; will retry');
          await outbox.update(sink, { through: passed, attempts: attempt, dueAt, failingSince, release: true });
          return dueAt - at;
        }
      }
      await settleGivenUp();
    } catch (err) {
      // Deleted while a delivery was under way: its record went with it, and there is nothing to keep.
      if (!(await queries.findForDelivery(hook.id))) return undefined;
      throw err;
    } finally {
      // Whatever happened, the endpoint is let go: what was passed over stays passed, the rest waits here.
      await outbox.update(sink, { through: passed, release: true }).catch(() => undefined);
    }
    return undefined;
  }

  return deliveryLoop({
    what: 'webhook delivery',
    pollInterval: config.webhooks.pollInterval,
    claim: (_now, limit) => outbox.claimDue(WEBHOOK_SINK_PREFIX, claimLease, limit),
    deliver,
    describe: (s) => ({ webhookId: s.name.slice(WEBHOOK_SINK_PREFIX.length) }),
    logger,
  });
}
