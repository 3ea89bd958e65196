import { randomUUID } from 'node:crypto';
import type { Actor, AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import { encrypt } from '../crypto/secrets.ts';
import type { Transaction } from '../db/transaction.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import { WEBHOOK_SINK_PREFIX, type SinkState } from '../events/model.ts';
import type { EventOutbox } from '../events/outbox.ts';
import type { OutboxQueries } from '../events/outbox-queries.ts';
import type { Page, PageRequest } from '../db/pagination.ts';
import type { AddressRules } from '../outbound/address-rules.ts';
import { urlRefusal } from '../outbound/url-check.ts';
import type { ListedWebhook, Webhook, WebhookDelivery } from './model.ts';
import { checkPatterns } from './patterns.ts';
import { newSecret } from './signature.ts';
import type { WebhookQueries } from './webhook-queries.ts';

const DESCRIPTION_MAX = 200;
const URL_MAX = 2000;

export interface RegisteredWebhook {
  /** The signing secret (`whsec_…`): returned here, once, and never again. */
  secret: string;
  webhook: ListedWebhook;
}

export interface WebhookInput {
  url?: string | null;
  events?: readonly string[] | null;
  description?: string | null;
}

/** What a registration, change or deletion needs of a transaction: the row, the queue's cursor and the audit event commit together. */
interface WebhookTransaction {
  queries: { webhooks: WebhookQueries; events: OutboxQueries };
  audit: Pick<AuditLog, 'change'>;
}

/** An absolute http(s) URL without fragment or credentials, to an address Latchkey calls (docs/decisions.md "Outbound fetches"). */
function checkUrl(raw: string, outbound: AddressRules): string {
  const uri = raw.trim();
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new InputError('url', `${JSON.stringify(uri)} is not an absolute URL`);
  }
  if (uri.length > URL_MAX) throw new InputError('url', `at most ${URL_MAX} characters`);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InputError('url', `${uri}: must be http or https`);
  if (url.hash || uri.includes('#')) throw new InputError('url', `${uri} must not have a fragment`);
  // The signature authenticates Latchkey to the receiver: a password in the URL would be listed to every admin.
  if (url.username || url.password) throw new InputError('url', 'must not carry a user name or password; the signature authenticates');
  const why = urlRefusal(url, outbound);
  if (why) throw new InputError('url', `${uri}: ${why}`);
  return uri;
}

function checkDescription(raw: string | null | undefined): string {
  const description = raw?.trim() ?? '';
  if (description.length > DESCRIPTION_MAX || /[\x00-\x1f\x7f]/.test(description)) {
    throw new InputError('description', `must be at most ${DESCRIPTION_MAX} characters, no control characters`);
  }
  return description;
}

/** What the audit trail says of an endpoint: its origin, never its path or query (which may carry a receiver's token). */
const origin = (url: string) => new URL(url).origin;

/**
 * Webhooks (docs/webhooks.md): registered, changed and deleted by an administrator, each an admin
 * change with its audit event; the endpoint's place in the queue of events going out (src/events/) is
 * made and dropped in the same transaction. Delivery is the worker's (worker.ts).
 */
export function webhookService(
  queries: WebhookQueries,
  deps: {
    outbox: Pick<EventOutbox, 'states'>;
    transaction: Transaction<WebhookTransaction>;
    /** Seals the signing secrets (derived from LATCHKEY_SECRET). */
    secretKey: Buffer;
    outbound: AddressRules;
  },
) {
  const { transaction, outbound } = deps;

  async function listed(hooks: Webhook[]): Promise<ListedWebhook[]> {
    const states = new Map<string, SinkState>((await deps.outbox.states(WEBHOOK_SINK_PREFIX)).map((s) => [s.name, s]));
    return hooks.map((h) => ({ ...h, failingSince: states.get(WEBHOOK_SINK_PREFIX + h.id)?.failingSince ?? null }));
  }

  return {
    /** Every webhook, oldest first, without its secret. */
    list: async (): Promise<ListedWebhook[]> => listed(await queries.list()),

    /** A new endpoint for the events the patterns name, from now on; its secret is returned here, once. */
    async register(input: WebhookInput, actor: Actor): Promise<RegisteredWebhook> {
      const now = clock.now();
      const hook: Webhook = {
        id: randomUUID(),
        url: checkUrl(input.url ?? '', outbound),
        events: checkPatterns(input.events ?? []),
        description: checkDescription(input.description),
        createdBy: actor.userId ?? actor.clientId ?? null,
        createdAt: now,
        updatedAt: now,
      };
      const secret = newSecret();
      await transaction(async (tx) => {
        await tx.queries.webhooks.insert(hook, encrypt(deps.secretKey, secret));
        await tx.audit.change('webhook.register', actor, {}, { webhookId: hook.id, origin: origin(hook.url), events: hook.events });
        // After its own registration's event: the endpoint's first event is the next one.
        await tx.queries.events.open(WEBHOOK_SINK_PREFIX + hook.id, now);
      });
      return { secret, webhook: { ...hook, failingSince: null } };
    },

    /** Changes the URL, the patterns or the description; the events already queued keep their place. */
    async update(id: string, input: WebhookInput, actor: Actor): Promise<ListedWebhook> {
      const hook = await transaction(async (tx) => {
        const known = await tx.queries.webhooks.find(id);
        if (!known) throw new NotFoundError('id', `no webhook ${id}`);
        const changed: Webhook = {
          ...known,
          url: input.url == null ? known.url : checkUrl(input.url, outbound),
          events: input.events == null ? known.events : checkPatterns(input.events),
          description: input.description == null ? known.description : checkDescription(input.description),
          updatedAt: clock.now(),
        };
        await tx.queries.webhooks.update(changed);
        await tx.audit.change('webhook.update', actor, {}, { webhookId: id, origin: origin(changed.url), events: changed.events });
        return changed;
      });
      return (await listed([hook]))[0]!;
    },

    /** Deletes an endpoint with its deliveries' record; nothing more is sent to it. False when there is no such webhook. */
    remove(id: string, actor: Actor): Promise<boolean> {
      return transaction(async (tx) => {
        const known = await tx.queries.webhooks.find(id);
        if (!known) return false;
        await tx.queries.webhooks.remove(id);
        await tx.queries.events.remove(WEBHOOK_SINK_PREFIX + id);
        await tx.audit.change('webhook.delete', actor, {}, { webhookId: id, origin: origin(known.url) });
        return true;
      });
    },

    /** A webhook's attempts, newest first: NOT_FOUND naming `webhookId` when there is no such webhook. */
    async deliveries(webhookId: string, page: PageRequest): Promise<Page<WebhookDelivery>> {
      if (!(await queries.find(webhookId))) throw new NotFoundError('webhookId', `no webhook ${webhookId}`);
      return queries.deliveries(webhookId, page);
    },
  };
}

export type WebhookService = ReturnType<typeof webhookService>;
