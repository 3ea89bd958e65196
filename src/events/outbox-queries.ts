import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { num, numOrNull } from '../db/rows.ts';
import type { EventPosition, HeldBack, HorizonHolder, OutgoingEvent, SinkBacklog, SinkState, SinkUpdate, StaleEvents } from './model.ts';

/**
 * PostgreSQL: the transactions older than every transaction still running (on the whole server) have
 * all ended, so the events they recorded are all there is below this: a reader takes only those, and
 * no slower transaction can commit an event behind its cursor later. SQLite commits one writer at a
 * time in id order: there, every committed event is final.
 */
const PG_HORIZON = 'pg_snapshot_xmin(pg_current_snapshot())::text::bigint';

const isPg = (db: Knex) => db.client.config.client === 'pg';

const toState = (r: Record<string, unknown>): SinkState => ({
  name: String(r.name),
  position: { txid: String(r.txid), id: String(r.event_id) },
  attempts: num(r.attempts),
  dueAt: num(r.due_at),
  failingSince: numOrNull(r.failing_since),
});

const toEvent = (r: Record<string, unknown>): OutgoingEvent => ({
  position: { txid: String(r.txid), id: String(r.id) },
  id: String(r.id),
  at: num(r.at),
  kind: String(r.kind),
  userId: (r.user_id as string | null) ?? null,
  clientId: (r.client_id as string | null) ?? null,
  actorUserId: (r.actor_user_id as string | null) ?? null,
  actorClientId: (r.actor_client_id as string | null) ?? null,
  ip: (r.ip as string | null) ?? null,
  requestId: (r.request_id as string | null) ?? null,
  details: r.details == null ? null : (JSON.parse(String(r.details)) as Record<string, unknown>),
});

/**
 * The queue of audit events going out (docs/decisions.md "Events out"): the sinks' cursors over the
 * audit trail, read in stream order, and the leases that let one process send for a sink at a time.
 */
export const outboxQueries = ({ knex: db }: Database) => ({
  /** Makes the sink's cursor, at the end of the stream as it stands (events recorded from now on are its); nothing if it exists. */
  async open(name: string, now: number): Promise<void> {
    if (isPg(db)) {
      // After the last event there is now: an event of a transaction still running whose position is
      // lower counts as recorded before, and is not the sink's either.
      await db.raw(
        `insert into event_sinks (name, txid, event_id, created_at)
         select ?, coalesce(max(e.txid), 0), coalesce(max(e.id), 0), ? from (select txid, id from audit_events order by txid desc, id desc limit 1) e
         on conflict (name) do nothing`,
        [name, now],
      );
    } else {
      await db.raw(
        'insert into event_sinks (name, txid, event_id, created_at) values (?, 0, (select coalesce(max(id), 0) from audit_events), ?) on conflict (name) do nothing',
        [name, now],
      );
    }
  },

  async remove(name: string): Promise<void> {
    await db('event_sinks').where({ name }).delete();
  },

  async find(name: string): Promise<SinkState | undefined> {
    const row = await db('event_sinks').where({ name }).first();
    return row ? toState(row) : undefined;
  },

  /** The states of the sinks whose names start with `prefix`. */
  async list(prefix: string): Promise<SinkState[]> {
    return (await db('event_sinks').where('name', 'like', `${prefix}%`).select('*')).map(toState);
  },

  /** Up to `limit` events after `after`, in stream order, none of which a slower transaction can still precede. */
  async read(after: EventPosition, limit: number): Promise<OutgoingEvent[]> {
    const rows = isPg(db)
      ? await db('audit_events')
          .whereRaw('(txid, id) > (?, ?)', [after.txid, after.id])
          .andWhereRaw(`txid < ${PG_HORIZON}`)
          .orderBy([{ column: 'txid' }, { column: 'id' }])
          .limit(limit)
          .select('*')
      : await db('audit_events').where('id', '>', after.id).orderBy('id').limit(limit).select('*');
    return (rows as Array<Record<string, unknown>>).map(toEvent);
  },

  /**
   * Takes up to `limit` sinks named `prefix…` that are due, unleased (or whose holder's lease ran out)
   * and have an event to read, each by one conditional UPDATE: of several processes claiming at once
   * one gets each sink.
   */
  async claimDue(prefix: string, holder: string, now: number, until: number, limit: number): Promise<SinkState[]> {
    const waiting = isPg(db)
      ? `exists (select 1 from audit_events e where (e.txid, e.id) > (s.txid, s.event_id) and e.txid < ${PG_HORIZON})`
      : 'exists (select 1 from audit_events e where e.id > s.event_id)';
    const due = (await db('event_sinks as s')
      .where('s.name', 'like', `${prefix}%`)
      .andWhere('s.due_at', '<=', now)
      .andWhere((w) => w.whereNull('s.lease_until').orWhere('s.lease_until', '<', now))
      .andWhereRaw(waiting)
      .orderBy('s.due_at')
      .limit(limit)
      .select('s.*')) as Array<Record<string, unknown>>;
    const claimed: SinkState[] = [];
    for (const r of due) {
      const won = await db('event_sinks')
        .where({ name: r.name as string })
        .andWhere((w) => w.whereNull('lease_until').orWhere('lease_until', '<', now))
        .update({ lease_holder: holder, lease_until: until });
      if (won === 1) claimed.push(toState(r));
    }
    return claimed;
  },

  /** Takes the sink's lease until `until` only if nobody holds it (not even `holder`): true when it took it. */
  async leaseIfFree(name: string, holder: string, now: number, until: number): Promise<boolean> {
    const n = await db('event_sinks')
      .where({ name })
      .andWhere((w) => w.whereNull('lease_until').orWhere('lease_until', '<', now))
      .update({ lease_holder: holder, lease_until: until });
    return n === 1;
  },

  /** Takes or renews the sink's lease until `until`: true when `holder` has it. */
  async lease(name: string, holder: string, now: number, until: number): Promise<boolean> {
    const n = await db('event_sinks')
      .where({ name })
      .andWhere((w) => w.where('lease_holder', holder).orWhereNull('lease_until').orWhere('lease_until', '<', now))
      .update({ lease_holder: holder, lease_until: until });
    return n === 1;
  },

  /** Applies `change` if `holder` still holds the sink's lease: false when another process took it over. */
  async update(name: string, holder: string, change: SinkUpdate): Promise<boolean> {
    const set: Record<string, unknown> = {};
    if (change.through) {
      set.txid = change.through.txid;
      set.event_id = change.through.id;
    }
    if (change.attempts !== undefined) set.attempts = change.attempts;
    if (change.dueAt !== undefined) set.due_at = change.dueAt;
    if (change.failingSince !== undefined) set.failing_since = change.failingSince;
    if (change.release) {
      set.lease_holder = null;
      set.lease_until = null;
    }
    if (Object.keys(set).length === 0) return true;
    return (await db('event_sinks').where({ name, lease_holder: holder }).update(set)) === 1;
  },

  /**
   * The events after `after` recorded before `cutoff`, up to the first one recorded since (in stream
   * order, readable ones only: an event of a transaction still running is not passed over unseen);
   * undefined when the first event after `after` is that recent, or there is none.
   */
  async stale(after: EventPosition, cutoff: number): Promise<StaleEvents | undefined> {
    const pg = isPg(db);
    const range = (young?: EventPosition) => {
      const q = pg
        ? db('audit_events').whereRaw('(txid, id) > (?, ?)', [after.txid, after.id]).andWhereRaw(`txid < ${PG_HORIZON}`)
        : db('audit_events').where('id', '>', after.id);
      if (young) pg ? q.andWhereRaw('(txid, id) < (?, ?)', [young.txid, young.id]) : q.andWhere('id', '<', young.id);
      return q;
    };
    const order = (dir: 'asc' | 'desc') =>
      pg
        ? [
            { column: 'txid', order: dir },
            { column: 'id', order: dir },
          ]
        : [{ column: 'id', order: dir }];
    // Scans from the cursor to the first recent event: a check that runs as events age is a short scan.
    const young = (await range().andWhere('at', '>=', cutoff).orderBy(order('asc')).first('txid', 'id')) as
      | Record<string, unknown>
      | undefined;
    const youngPos = young ? { txid: String(young.txid), id: String(young.id) } : undefined;
    const first = (await range(youngPos).orderBy(order('asc')).first('id')) as Record<string, unknown> | undefined;
    if (!first) return undefined;
    const last = (await range(youngPos).orderBy(order('desc')).first('txid', 'id')) as Record<string, unknown>;
    const through = { txid: String(last.txid), id: String(last.id) };
    const [counted] = (await (pg
      ? range().andWhereRaw('(txid, id) <= (?, ?)', [through.txid, through.id])
      : range().andWhere('id', '<=', through.id)
    ).count({ n: '*' })) as Array<{ n: unknown }>;
    return { events: num(counted?.n), firstEventId: String(first.id), lastEventId: through.id, through };
  },

  /**
   * Moves the cursor from `from` to `to`, passing over what lies between, if `holder` holds the lease
   * and nobody moved the cursor since; the next event is due at once.
   */
  async skip(name: string, holder: string, from: EventPosition, to: EventPosition): Promise<boolean> {
    const n = await db('event_sinks')
      .where({ name, lease_holder: holder, txid: from.txid, event_id: from.id })
      .update({ txid: to.txid, event_id: to.id, attempts: 0, due_at: 0 });
    return n === 1;
  },

  /**
   * Every sink's backlog: when the first event after its cursor was recorded (read or not: on
   * PostgreSQL an event a running transaction holds back counts), and how many follow it, up to `cap`
   * (an index range of at most `cap` entries per sink).
   */
  async backlogs(cap: number): Promise<SinkBacklog[]> {
    const pg = isPg(db);
    const sinks = (await db('event_sinks').select('name', 'txid', 'event_id')) as Array<Record<string, unknown>>;
    const out: SinkBacklog[] = [];
    for (const s of sinks) {
      const after = () =>
        pg
          ? db('audit_events').whereRaw('(txid, id) > (?, ?)', [String(s.txid), String(s.event_id)])
          : db('audit_events').where('id', '>', String(s.event_id));
      const head = (await after()
        .orderBy(pg ? [{ column: 'txid' }, { column: 'id' }] : [{ column: 'id' }])
        .first('at')) as Record<string, unknown> | undefined;
      let events = 0;
      if (head) {
        const [counted] = (await db.from(after().select(db.raw('1 as one')).limit(cap).as('backlog')).count({ n: '*' })) as Array<{
          n: unknown;
        }>;
        events = num(counted?.n);
      }
      out.push({ sink: String(s.name), oldestAt: head ? num(head.at) : null, events });
    }
    return out;
  },

  /**
   * PostgreSQL: the first event that is committed but that no sink may read yet, because a transaction
   * older than it still runs on the server; undefined when there is none, no sink, or on SQLite.
   */
  async heldBack(): Promise<HeldBack | undefined> {
    if (!isPg(db)) return undefined;
    const { rows } = (await db.raw(
      `select e.at, ${PG_HORIZON} as xid from audit_events e
       where e.txid >= ${PG_HORIZON} and exists (select 1 from event_sinks)
       order by e.txid, e.id limit 1`,
    )) as { rows: Array<Record<string, unknown>> };
    const r = rows[0];
    return r ? { since: num(r.at), xid: String(r.xid) } : undefined;
  },

  /**
   * PostgreSQL: the session (or prepared transaction) whose transaction is the horizon: the oldest one
   * running. Another role's sessions show only to a superuser or a member of `pg_read_all_stats`:
   * undefined then.
   */
  async horizonHolder(): Promise<HorizonHolder | undefined> {
    if (!isPg(db)) return undefined;
    // xid8 is the 32-bit xid with its epoch above: the sessions' views show the 32-bit part.
    const xid = `(${PG_HORIZON} % 4294967296)`;
    const { rows } = (await db.raw(
      `select pid, datname as database, state, extract(epoch from now() - xact_start)::float8 as open_seconds
         from pg_stat_activity where backend_xid is not null and backend_xid::text::bigint = ${xid}
       union all
       select null, database, 'prepared', extract(epoch from now() - prepared)::float8
         from pg_prepared_xacts where transaction::text::bigint = ${xid}
       limit 1`,
    )) as { rows: Array<Record<string, unknown>> };
    const r = rows[0];
    if (!r) return undefined;
    return {
      pid: numOrNull(r.pid),
      database: (r.database as string | null) ?? null,
      state: (r.state as string | null) ?? null,
      openSeconds: r.open_seconds == null ? null : Math.round(Number(r.open_seconds)),
    };
  },
});

export type OutboxQueries = ReturnType<typeof outboxQueries>;
