/**
 * Audit events going out (docs/decisions.md "Events out"): the stream's positions, an event as a sink
 * reads it, and a sink's state. A model module: types and their constants, no SQL.
 */

/**
 * Where an event stands in the stream: (txid, id), compared in that order. Opaque to a sink: it hands
 * back what it read. Strings, as PostgreSQL's bigint columns come back.
 */
export interface EventPosition {
  txid: string;
  id: string;
}

/** An audit event as a sink reads it from the queue. */
export interface OutgoingEvent {
  position: EventPosition;
  /** The audit event's id (`auditEvents` in GraphQL). */
  id: string;
  /** When it was recorded (ms). */
  at: number;
  kind: string;
  userId: string | null;
  clientId: string | null;
  actorUserId: string | null;
  actorClientId: string | null;
  ip: string | null;
  requestId: string | null;
  details: Record<string, unknown> | null;
}

/** A sink's cursor and delivery state, as the queue keeps it. */
export interface SinkState {
  /** `webhook:<id>`, `syslog`. */
  name: string;
  /** The last event it is done with (delivered, skipped or given up); it reads after this. */
  position: EventPosition;
  /** Tries of the next event so far (a sink that retries one event at a time). */
  attempts: number;
  /** When it is due again (ms; 0 at once). */
  dueAt: number;
  /** Since when sending has failed with no success in between (ms); null when the last send succeeded. */
  failingSince: number | null;
}

/** The change a sink makes to its state: the cursor moved, the retry state set. */
export interface SinkUpdate {
  /** The cursor moves to this event (the sink is done with it and everything before). */
  through?: EventPosition;
  attempts?: number;
  dueAt?: number;
  failingSince?: number | null;
  /** Lets go of the lease too. */
  release?: boolean;
}

/** The sink names of webhook endpoints: `webhook:` and the webhook's id. */
export const WEBHOOK_SINK_PREFIX = 'webhook:';
