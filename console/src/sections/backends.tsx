/** The identity backends in the order they are tried, then the upstream providers (docs/upstream-identity-providers.md), and whether each answers now. */
import { request } from '../api/graphql.ts';
import { IdentityBackendsQuery } from '../api/generated.ts';
import { ErrorNote, Loading, useLoad } from '../ui/kit.tsx';
import { Table, type Column } from '../ui/table.tsx';

const columns: Array<Column<IdentityBackendsQuery['identityBackends'][number]>> = [
  { header: 'Order', cell: (b) => b.order + 1 },
  { header: 'ID', rowHeader: true, cell: (b) => b.id },
  { header: 'Plugin', cell: (b) => (b.type === 'upstream' ? `${b.plugin} (upstream)` : b.plugin) },
  // An upstream not used since the start is `unknown`: its metadata is read on first use.
  { header: 'State', cell: (b) => <span class={`badge ${b.up ? 'on' : 'off'}`}>{b.state}</span> },
];

export function BackendsSection() {
  const list = useLoad(() => request(IdentityBackendsQuery, {}), []);
  const backends = list.data?.identityBackends;
  return (
    <section aria-busy={list.loading}>
      <div class="toolbar">
        <p class="lede">
          A password is checked against each backend in turn; the first that holds the username answers for it. Upstream providers sign
          their users in themselves.
        </p>
        <button type="button" class="secondary" onClick={list.reload} disabled={list.loading}>
          {list.loading ? 'Checking…' : 'Check again'}
        </button>
      </div>
      <ErrorNote error={list.error} />
      {list.loading && !backends ? <Loading>Checking the backends…</Loading> : null}
      <Table label="Identity backends" columns={columns} rows={backends} rowKey={(b) => b.id} empty="No identity backends." />
    </section>
  );
}
