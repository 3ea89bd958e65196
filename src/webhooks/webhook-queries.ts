import type { Database } from '../db/database.ts';
import { paginate, type Page, type PageRequest } from '../db/pagination.ts';
import { num, numOrNull } from '../db/rows.ts';
import { DELIVERY_RECORD_DAYS, type DeliveryStatus, type Webhook, type WebhookDelivery } from './model.ts';

const DAY_MS = 24 * 3600 * 1000;

const toWebhook = (r: Record<string, unknown>): Webhook => ({
  id: String(r.id),
  url: String(r.url),
  events: JSON.parse(String(r.events)) as string[],
  description: String(r.description ?? ''),
  createdBy: (r.created_by as string | null) ?? null,
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

const toDelivery = (r: Record<string, unknown>): WebhookDelivery => ({
  id: String(r.id),
  webhookId: String(r.webhook_id),
  eventId: String(r.event_id),
  kind: String(r.kind),
  attempt: num(r.attempt),
  status: String(r.status) as DeliveryStatus,
  httpStatus: numOrNull(r.http_status),
  error: (r.error as string | null) ?? null,
  at: num(r.at),
});

/** Registered webhooks (docs/webhooks.md), their sealed secrets, and the record of their deliveries. */
export const webhookQueries = ({ knex: db }: Database) => ({
  async insert(hook: Webhook, secretEnc: string): Promise<void> {
    await db('webhooks').insert({
      id: hook.id,
      url: hook.url,
      events: JSON.stringify(hook.events),
      description: hook.description,
      secret_enc: secretEnc,
      created_by: hook.createdBy,
      created_at: hook.createdAt,
      updated_at: hook.updatedAt,
    });
  },

  /** Every webhook, oldest first (a handful: no paging). */
  async list(): Promise<Webhook[]> {
    return (await db('webhooks').select('*').orderBy('created_at').orderBy('id')).map(toWebhook);
  },

  async find(id: string): Promise<Webhook | undefined> {
    const row = await db('webhooks').where({ id }).first();
    return row ? toWebhook(row) : undefined;
  },

  /** The webhook with its sealed secret, for signing. */
  async findForDelivery(id: string): Promise<{ hook: Webhook; secretEnc: string } | undefined> {
    const row = await db('webhooks').where({ id }).first();
    return row ? { hook: toWebhook(row), secretEnc: String(row.secret_enc) } : undefined;
  },

  async update(hook: Webhook): Promise<void> {
    await db('webhooks')
      .where({ id: hook.id })
      .update({ url: hook.url, events: JSON.stringify(hook.events), description: hook.description, updated_at: hook.updatedAt });
  },

  async remove(id: string): Promise<boolean> {
    return (await db('webhooks').where({ id }).delete()) > 0;
  },

  /**
   * Records an attempt, or replaces the record of the same attempt (a `pending` try that was then
   * made). Kept for DELIVERY_RECORD_DAYS (retention purges it then).
   */
  async record(d: Omit<WebhookDelivery, 'id'>): Promise<void> {
    await db('webhook_deliveries')
      .insert({
        webhook_id: d.webhookId,
        event_id: d.eventId,
        kind: d.kind,
        attempt: d.attempt,
        status: d.status,
        http_status: d.httpStatus,
        error: d.error,
        at: d.at,
        expires_at: d.at + DELIVERY_RECORD_DAYS * DAY_MS,
      })
      .onConflict(['webhook_id', 'event_id', 'attempt'])
      .merge(['status', 'http_status', 'error', 'at', 'expires_at']);
  },

  /** A webhook's attempts, newest first. */
  deliveries(webhookId: string, req: PageRequest): Promise<Page<WebhookDelivery>> {
    const q = db('webhook_deliveries').where({ webhook_id: webhookId }).select('*');
    return paginate(q, { ...req, timeColumn: 'at', keyColumn: 'id', direction: 'desc' }, toDelivery);
  },
});

export type WebhookQueries = ReturnType<typeof webhookQueries>;
