/** Webhooks in the admin API (docs/webhooks.md): the rules and audit events are the webhook service's; these only translate. */
import type { ListedWebhook, WebhookDelivery as Kept } from '../../webhooks/model.ts';
import { ENUM_VALUES } from '../enum-values.ts';
import { WebhookDeliveryStatus, type Resolvers, type Webhook, type WebhookDelivery } from '../generated/graphql.ts';

const iso = (ms: number) => new Date(ms).toISOString();
/** The generated enum of the service's status words (the same strings: ENUM_VALUES.WebhookDeliveryStatus). */
const STATUS = {
  delivered: WebhookDeliveryStatus.Delivered,
  failed: WebhookDeliveryStatus.Failed,
  pending: WebhookDeliveryStatus.Pending,
  given_up: WebhookDeliveryStatus.GivenUp,
} as const;

const toWebhook = (w: ListedWebhook): Webhook => ({
  id: w.id,
  url: w.url,
  events: w.events,
  description: w.description || null,
  createdBy: w.createdBy,
  createdAt: iso(w.createdAt),
  updatedAt: iso(w.updatedAt),
  failingSince: w.failingSince === null ? null : iso(w.failingSince),
});

const toDelivery = (d: Kept): WebhookDelivery => ({
  id: d.id,
  eventId: d.eventId,
  kind: d.kind,
  attempt: d.attempt,
  status: STATUS[d.status],
  httpStatus: d.httpStatus,
  at: iso(d.at),
  error: d.error,
});

export const webhookResolvers: Resolvers = {
  WebhookDeliveryStatus: ENUM_VALUES.WebhookDeliveryStatus,
  Query: {
    webhooks: async (_p, _a, { app }) => (await app.webhooks.list()).map(toWebhook),
    webhookDeliveries: async (_p, { webhookId, first, after }, { app }) => {
      const page = await app.webhooks.deliveries(webhookId, { first, after });
      return { ...page, edges: page.edges.map((e) => ({ cursor: e.cursor, node: toDelivery(e.node) })) };
    },
  },
  Mutation: {
    registerWebhook: async (_p, { url, events, description }, { app, actor }) => {
      const made = await app.webhooks.register({ url, events, description }, actor);
      return { secret: made.secret, webhook: toWebhook(made.webhook) };
    },
    updateWebhook: async (_p, { id, url, events, description }, { app, actor }) =>
      toWebhook(await app.webhooks.update(id, { url, events, description }, actor)),
    deleteWebhook: (_p, { id }, { app, actor }) => app.webhooks.remove(id, actor),
  },
};
