import type { Knex } from 'knex';
import { activeTracer, tracingOn, type Attributes, type Span } from '../telemetry/trace.ts';
import type { FastDb, Statement, Step } from './statements.ts';

export type DbSystem = 'sqlite' | 'postgresql';

interface Described {
  name: string;
  attributes: Attributes;
}

const OPERATION = /^\s*(\w+)/;
const TABLE = /\b(?:from|into|update)\s+[`"]?(\w+)/i;

/**
 * A statement's span name (`SELECT tokens`) and attributes: the SQL text as sent, placeholders and
 * all, never the parameters (docs/tracing.md "What a trace shows").
 */
function describe(system: DbSystem, sql: string): Described {
  const operation = (OPERATION.exec(sql)?.[1] ?? 'SQL').toUpperCase();
  const table = TABLE.exec(sql)?.[1];
  const attributes: Attributes = { 'db.system': system, 'db.operation': operation, 'db.statement': sql };
  if (table) attributes['db.sql.table'] = table;
  return { name: table ? `${operation} ${table}` : operation, attributes };
}

/**
 * A span per statement when tracing is on (docs/tracing.md), a child of the request's; off, the
 * database's own statements unchanged, so the hot paths run exactly as without tracing. The fast
 * statements are wrapped; knex's (the cold paths, and the fast statements inside a knex
 * transaction) are followed through its query events.
 */
export function withSpans(knex: Knex, fast: FastDb, system: DbSystem): FastDb {
  if (!tracingOn()) return fast;
  followKnex(knex, system);
  return tracedFast(fast, system);
}

function tracedFast(fast: FastDb, system: DbSystem): FastDb {
  const tracer = activeTracer();
  // The statements are declared once, at module level: their descriptions are made once too.
  const described = new Map<Statement, Described>();
  const sqlOf = (s: Statement) => (system === 'postgresql' ? s.pgSql : s.sql);
  const one = <T>(s: Statement, run: () => Promise<T>): Promise<T> => {
    let d = described.get(s);
    if (!d) described.set(s, (d = describe(system, sqlOf(s))));
    return tracer.span(d.name, 'client', d.attributes, run, false);
  };
  // A transaction's steps in one span: the statements it ran, in order.
  const batch = (operation: string, steps: Step[], run: () => Promise<number[] | null>) =>
    tracer.span(
      operation,
      'client',
      {
        'db.system': system,
        'db.operation': operation,
        'db.statement': steps.map((step) => sqlOf(step.stmt)).join(';\n'),
        'db.operation.batch.size': steps.length,
      },
      run,
      false,
    );
  return {
    get: <T>(s: Statement, params?: unknown[]) => one(s, () => fast.get<T>(s, params)),
    all: <T>(s: Statement, params?: unknown[]) => one(s, () => fast.all<T>(s, params)),
    run: (s: Statement, params?: unknown[]) => one(s, () => fast.run(s, params)),
    transaction: (steps) => batch('TRANSACTION', steps, () => fast.transaction(steps)),
    // The span lasts until the group this request's writes joined has committed.
    groupCommit: (steps) => batch('GROUP COMMIT', steps, () => fast.groupCommit(steps)),
    onNextSuccess: (fn) => fast.onNextSuccess(fn),
    oneWriter: fast.oneWriter,
  };
}

interface KnexQuery {
  __knexQueryUid?: string;
  sql?: string;
}

/** knex's statements, from its query events: a span from `query` to `query-response` or `query-error`. */
function followKnex(knex: Knex, system: DbSystem): void {
  const tracer = activeTracer();
  const open = new Map<string, Span>();
  knex.on('query', (q: KnexQuery) => {
    if (!q.__knexQueryUid || typeof q.sql !== 'string') return;
    const d = describe(system, q.sql);
    const span = tracer.start(d.name, 'client', d.attributes);
    if (span) open.set(q.__knexQueryUid, span);
  });
  const end = (q: KnexQuery | undefined, err?: unknown) => {
    const span = q?.__knexQueryUid ? open.get(q.__knexQueryUid) : undefined;
    if (!span) return;
    open.delete(q!.__knexQueryUid!);
    if (err !== undefined) tracer.fail(span, err);
    span.end();
  };
  knex.on('query-response', (_response: unknown, q: KnexQuery) => end(q));
  knex.on('query-error', (err: unknown, q: KnexQuery) => end(q, err ?? new Error('query failed')));
}
