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

/**
 * Events a sink's cursor is about to pass over, undelivered: the stretch after the cursor recorded
 * longer than `audit.sinkMaxBacklog` ago (docs/decisions.md "Events out").
 */
export interface StaleEvents {
  events: number;
  firstEventId: string;
  lastEventId: string;
  /** Where the cursor moves: the last of them. */
  through: EventPosition;
}

/** Stale events a sink skipped, as audited (`event_sink.skipped`) and logged. */
export interface SkippedEvents extends StaleEvents {
  sink: string;
}

/** What a sink has still to deliver, as the metrics show it. */
export interface SinkBacklog {
  sink: string;
  /** When the first event after its cursor was recorded (ms); null when there is none. */
  oldestAt: number | null;
  /** The events after its cursor, counted up to the cap the reader gave. */
  events: number;
}

/**
 * PostgreSQL: events committed but not yet deliverable, because a transaction older than them is
 * still running somewhere on the server (docs/decisions.md "Events out").
 */
export interface HeldBack {
  /** When the first of them was recorded (ms). */
  since: number;
  /** The oldest running transaction's id, the horizon no sink reads past. */
  xid: string;
}

/** The session (or prepared transaction) that holds the horizon, as far as PostgreSQL shows it to this role. */
export interface HorizonHolder {
  /** null for a prepared transaction. */
  pid: number | null;
  database: string | null;
  /** `idle in transaction`, `active`, … or `prepared`. */
  state: string | null;
  /** How long its transaction has been open (s). */
  openSeconds: number | null;
}
