/**
 * Webhooks (docs/webhooks.md): a registered endpoint and the record of each delivery attempt.
 * A model module: types and their constants, no SQL.
 */

/** An endpoint audit events are sent to, as it is kept (its signing secret apart: sealed, never listed). */
export interface Webhook {
  id: string;
  url: string;
  /** Kind patterns: `*`, `user.*`, `login.failure`. */
  events: string[];
  /** The administrators' note; '' when none. */
  description: string;
  /** The admin user (or client) who registered it; null when made otherwise. */
  createdBy: string | null;
  createdAt: number;
  updatedAt: number;
}

/** A webhook as the admin API lists it: with how its deliveries stand. */
export interface ListedWebhook extends Webhook {
  /** Since when its deliveries have failed with no success in between; null when the last one succeeded. */
  failingSince: number | null;
}

/** What became of one attempt: `pending` is the next try, scheduled and not yet made. */
export type DeliveryStatus = 'delivered' | 'failed' | 'pending' | 'given_up';

/** One attempt to send one event to one endpoint. */
export interface WebhookDelivery {
  id: string;
  webhookId: string;
  /** The audit event's id. */
  eventId: string;
  kind: string;
  /** 1 for the first try; 0 for an event given up untried (the endpoint failed for its whole retry window). */
  attempt: number;
  status: DeliveryStatus;
  /** The endpoint's HTTP status; null when it gave none (no connection, a timeout) or for a try not yet made. */
  httpStatus: number | null;
  /** Why it failed, in fixed words (never what the endpoint answered); null when delivered. */
  error: string | null;
  /** When it was made (or, pending, when it is due). */
  at: number;
}

/** How long each delivery's record is kept. */
export const DELIVERY_RECORD_DAYS = 30;
