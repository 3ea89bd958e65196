/** The audit trail, newest first, filtered by kind, user and client (the filters live in the URL). */
import { useLayoutEffect, useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { AuditEventsQuery } from '../api/generated.ts';
import { ErrorNote, Loading, Pager, useCursorPages, useLoad, when } from '../ui/kit.tsx';
import { href, navigate, route } from '../ui/router.ts';
import { Table, type Column } from '../ui/table.tsx';
import { Named } from './names.tsx';

const PAGE = 25;
const KINDS = [
  'admin.change',
  'login.success',
  'login.failure',
  'login.throttled',
  'token.issued',
  'token.revoked',
  'token.reuse_detected',
  'code.replayed',
  'consent.granted',
  'logout',
];

/** The interesting part of an event's JSON details: the admin action first, then the rest. */
function describe(details: string | null | undefined): { action?: string; rest: string } {
  if (!details) return { rest: '' };
  try {
    // The permission and role an admin change was made under are shown beside its actor.
    const { action, via, permission: _permission, role: _role, ...rest } = JSON.parse(details) as Record<string, unknown>;
    const text = Object.entries(rest).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
    if (via) text.push(`via ${String(via)}`);
    return { action: typeof action === 'string' ? action : undefined, rest: text.join(', ') };
  } catch {
    return { rest: details };
  }
}

type AuditRow = AuditEventsQuery['auditEvents']['edges'][number]['node'] & { described: ReturnType<typeof describe> };

const columns: Array<Column<AuditRow>> = [
  { header: 'When', cell: (e) => <time dateTime={e.at}>{when(e.at)}</time> },
  {
    header: 'Event',
    rowHeader: true,
    cell: (e) => (
      <>
        {e.kind}
        {e.described.action ? <span class="action">{e.described.action}</span> : null}
      </>
    ),
  },
  { header: 'User', cell: (e) => (e.userId ? <Named kind="user" id={e.userId} /> : '—') },
  { header: 'Client', cell: (e) => (e.clientId ? <Named kind="client" id={e.clientId} /> : '—') },
  {
    header: 'By',
    cell: (e) => (
      <>
        {e.actorUserId ? <Named kind="user" id={e.actorUserId} /> : e.actorClientId ? <Named kind="client" id={e.actorClientId} /> : '—'}
        {e.role ? (
          <span class="hint">
            {' '}
            as {e.role} ({e.permission})
          </span>
        ) : null}
        {e.ip ? <span class="hint"> from {e.ip}</span> : null}
      </>
    ),
  },
  { header: 'Details', class: 'details', cell: (e) => e.described.rest || '—' },
];

export function AuditSection() {
  const { query } = route.use();
  const filters = { kind: query.get('kind') ?? '', userId: query.get('userId') ?? '', clientId: query.get('clientId') ?? '' };
  const [draft, setDraft] = useState(filters);
  // The form follows the URL (a filter applied, Clear, Back) as the page renders. As a useEffect it
  // waited for the next frame, and Preact runs a pending effect before the component's next render:
  // when a keystroke came first (frames come late on a busy machine), that render ran it, and the
  // URL's filters replaced what had just been typed.
  useLayoutEffect(() => setDraft(filters), [filters.kind, filters.userId, filters.clientId]);
  const pages = useCursorPages([filters.kind, filters.userId, filters.clientId]);
  const list = useLoad(
    () =>
      request(AuditEventsQuery, {
        first: PAGE,
        after: pages.after,
        kind: filters.kind || null,
        userId: filters.userId || null,
        clientId: filters.clientId || null,
      }),
    [pages.after, filters.kind, filters.userId, filters.clientId],
  );
  const apply = (f: typeof filters) =>
    navigate(href('audit', { kind: f.kind.trim(), userId: f.userId.trim(), clientId: f.clientId.trim() }));
  const input = (name: keyof typeof filters, label: string, extra: Record<string, string> = {}) => (
    <div class="field">
      <label for={`audit-${name}`}>{label}</label>
      <input
        id={`audit-${name}`}
        value={draft[name]}
        onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })}
        autoComplete="off"
        {...extra}
      />
    </div>
  );
  const conn = list.data?.auditEvents;
  return (
    <>
      <form
        class="filters panel"
        aria-label="Filter audit events"
        onSubmit={(e) => {
          e.preventDefault();
          apply(draft);
        }}
      >
        <div class="grid three">
          {input('kind', 'Kind', { list: 'audit-kinds' })}
          {input('userId', 'User ID')}
          {input('clientId', 'Client ID')}
        </div>
        <datalist id="audit-kinds">
          {KINDS.map((k) => (
            <option key={k} value={k} />
          ))}
        </datalist>
        <div class="actions">
          <button type="submit">Filter</button>
          <button type="button" class="secondary" onClick={() => apply({ kind: '', userId: '', clientId: '' })}>
            Clear filters
          </button>
        </div>
      </form>
      <section aria-labelledby="audit-list-title" aria-busy={list.loading}>
        <h2 id="audit-list-title" class="visually-hidden">
          Events
        </h2>
        <ErrorNote error={list.error} labels={{ userId: 'User ID', clientId: 'Client ID', kind: 'Kind' }} />
        {list.loading && !conn ? <Loading>Loading events…</Loading> : null}
        <Table
          label="Audit events"
          class="audit"
          columns={columns}
          rows={conn?.edges.map(({ node }) => ({ ...node, described: describe(node.details) }))}
          rowKey={(e) => e.id}
          empty="No events match."
        />
        <Pager label="Audit events" size={PAGE} pages={pages} conn={conn} />
      </section>
    </>
  );
}
