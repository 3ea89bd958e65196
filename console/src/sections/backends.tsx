/** The identity backends in the order they are tried, and whether each answers now. */
import { request } from '../api/graphql.ts';
import { IdentityBackendsQuery } from '../api/generated.ts';
import { ErrorNote, Loading, useLoad } from '../ui/kit.tsx';

export function BackendsSection() {
  const list = useLoad(() => request(IdentityBackendsQuery, {}), []);
  const backends = list.data?.identityBackends;
  return (
    <section aria-busy={list.loading}>
      <div class="toolbar">
        <p class="lede">A password is checked against each backend in turn; the first that holds the username answers for it.</p>
        <button type="button" class="secondary" onClick={list.reload} disabled={list.loading}>
          {list.loading ? 'Checking…' : 'Check again'}
        </button>
      </div>
      <ErrorNote error={list.error} />
      {list.loading && !backends ? <Loading>Checking the backends…</Loading> : null}
      {backends ? (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Order</th>
              <th scope="col">ID</th>
              <th scope="col">Plugin</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {backends.map((b) => (
              <tr key={b.id}>
                <td data-label="Order">{b.order + 1}</td>
                <th scope="row" data-label="ID">
                  {b.id}
                </th>
                <td data-label="Plugin">{b.plugin}</td>
                <td data-label="State">
                  <span class={`badge ${b.up ? 'on' : 'off'}`}>{b.up ? 'up' : 'down'}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
