/**
 * The identity backends in the order they are tried, then the upstream providers (docs/upstream-identity-providers.md),
 * whether each answers now, and for a directory that is synced (docs/directory-sync.md) its last pass and a pass now
 * (for an admin who may create, change and disable users, as a pass does).
 */
import { useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { IdentityBackendsQuery, SyncBackendMutation } from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { ErrorNote, Loading, Notice, useAction, useLoad, when } from '../ui/kit.tsx';
import { Table, type Column } from '../ui/table.tsx';

type Backend = IdentityBackendsQuery['identityBackends'][number];
type Counts = { users: number; created: number; updated: number; deprovisioned: number; reenabled: number };

/** "every 5 min", "when asked", or nothing for a backend that is not synced. */
function cadence(seconds: number | null | undefined): string {
  if (seconds == null) return '—';
  if (seconds === 0) return 'when asked';
  return seconds % 60 === 0 ? `every ${seconds / 60} min` : `every ${seconds} s`;
}

const changes = (c: Counts) =>
  `${c.users} users listed; ${c.created} new, ${c.updated} changed, ${c.deprovisioned} deprovisioned, ${c.reenabled} back`;

/** The badge of a pass's outcome. */
const OUTCOME = { APPLIED: ['on', 'applied'], REFUSED: ['off', 'refused'], FAILED: ['off', 'failed'] } as const;

function LastSync({ backend }: { backend: Backend }) {
  const last = backend.lastSync;
  if (backend.syncInterval == null) return <>—</>;
  if (!last) return <span class="hint">not synced yet</span>;
  const [tone, word] = OUTCOME[last.outcome];
  return (
    <>
      <span class={`badge ${tone}`}>{word}</span> {when(last.at)}
      <p class="hint">{changes(last)}</p>
      {last.error ? <p class="hint">{last.error}</p> : null}
      {last.outcome !== 'APPLIED' && last.lastSuccessAt ? <p class="hint">Last applied: {when(last.lastSuccessAt)}</p> : null}
    </>
  );
}

const columns: Array<Column<Backend>> = [
  { header: 'Order', cell: (b) => b.order + 1 },
  { header: 'ID', rowHeader: true, cell: (b) => b.id },
  { header: 'Plugin', cell: (b) => (b.type === 'upstream' ? `${b.plugin} (upstream)` : b.plugin) },
  // An upstream not used since the start is `unknown`: its metadata is read on first use.
  { header: 'State', cell: (b) => <span class={`badge ${b.up ? 'on' : 'off'}`}>{b.state}</span> },
  { header: 'Directory sync', cell: (b) => cadence(b.syncInterval) },
  { header: 'Last sync', class: 'details', cell: (b) => <LastSync backend={b} /> },
];

export function BackendsSection() {
  const list = useLoad(() => request(IdentityBackendsQuery, {}), []);
  const sync = useAction();
  const [syncing, setSyncing] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const can = useCan();
  const maySync = can('users:write') && can('users:enable');
  const backends = list.data?.identityBackends;

  async function syncNow(b: Backend) {
    setNotice(undefined);
    setSyncing(b.id);
    const result = await sync.run(async () => (await request(SyncBackendMutation, { id: b.id })).syncBackend);
    setSyncing(undefined);
    if (result) {
      const [, word] = OUTCOME[result.outcome];
      setNotice(
        `The sync of ${b.id} ${word === 'applied' ? 'is done' : `was ${word}`}: ${changes(result)}.${result.error ? ` ${result.error}` : ''}`,
      );
    }
    list.reload();
  }

  return (
    <section aria-busy={list.loading}>
      <div class="toolbar">
        <p class="lede">
          A password is checked against each backend in turn; the first that holds the username answers for it. Upstream providers sign
          their users in themselves. A synced directory brings its joiners, movers and leavers in on its interval.
        </p>
        <button type="button" class="secondary" onClick={list.reload} disabled={list.loading}>
          {list.loading ? 'Checking…' : 'Check again'}
        </button>
      </div>
      <Notice text={notice} />
      <ErrorNote error={sync.error} />
      <ErrorNote error={list.error} />
      {list.loading && !backends ? <Loading>Checking the backends…</Loading> : null}
      <Table
        label="Identity backends"
        columns={columns}
        rows={backends}
        rowKey={(b) => `${b.type}:${b.id}`}
        empty="No identity backends."
        actions={(b) =>
          b.syncInterval == null || !maySync ? null : (
            <button
              type="button"
              class="secondary"
              aria-label={`Sync ${b.id} now`}
              disabled={syncing !== undefined}
              onClick={() => void syncNow(b)}
            >
              {syncing === b.id ? 'Syncing…' : 'Sync now'}
            </button>
          )
        }
      />
    </section>
  );
}
