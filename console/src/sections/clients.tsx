/**
 * Clients: list, search, pages; register (the secret shown once), edit, rotate the secret, delete.
 * Registering and deleting take apps:write; an application owner (apps:owned) edits and rotates only the
 * clients whose owners name them, and the list holds only those (docs/admin-console.md "What each role sees").
 */
import { useEffect, useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { ClientsQuery, DeleteClientMutation, RotateClientSecretMutation, type ClientFieldsFragment } from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { Dialog, ErrorNote, Loading, Pager, SearchBox, useAction, useCursorPages, useLoad, Notice } from '../ui/kit.tsx';
import { SecretPanel } from '../ui/secret-panel.tsx';
import { follow, href, route } from '../ui/router.ts';
import { Table, type Column } from '../ui/table.tsx';
import { ApplicationPage } from './application.tsx';
import { ClientForm, clientLabels } from './client-form.tsx';

const PAGE = 20;
const BUILT_IN = new Set(['admin-cli', 'admin-console']);
const grantNames: Record<string, string> = {
  AUTHORIZATION_CODE: 'code',
  REFRESH_TOKEN: 'refresh',
  PASSWORD: 'password',
  CLIENT_CREDENTIALS: 'client credentials',
  DEVICE_CODE: 'device code',
};

/** A new secret, on screen once: it is stored only as a hash. */
const NewSecret = ({ name, clientId, secret, onClose }: { name: string; clientId: string; secret: string; onClose: () => void }) => (
  <SecretPanel
    id="secret"
    title={`The secret of ${name}`}
    values={[
      { term: 'Client ID', id: 'new-client-id', value: clientId, copy: 'Copy client ID' },
      { term: 'Client secret', id: 'new-client-secret', value: secret, copy: 'Copy client secret' },
    ]}
    onClose={onClose}
  >
    <p>Store it now: it is shown only this once. Lost, it can only be replaced (rotate the secret).</p>
  </SecretPanel>
);

type Confirm = { kind: 'delete' | 'rotate'; client: ClientFieldsFragment };

const columns: Array<Column<ClientFieldsFragment>> = [
  { header: 'Name', rowHeader: true, cell: (c) => c.name },
  { header: 'Client ID', cell: (c) => <code>{c.clientId}</code> },
  { header: 'Type', cell: (c) => (c.confidential ? 'confidential' : 'public') },
  { header: 'Grants', cell: (c) => c.grantTypes.map((g) => grantNames[g] ?? g).join(', ') },
  { header: 'Redirect URIs', class: 'uris', cell: (c) => c.redirectUris.join(' ') || '—' },
];

/** The list, or one client's page (`?app=<client id>`: its access, roles and claims, docs/access-and-claims.md). */
export function ClientsSection() {
  const { query } = route.use();
  const app = query.get('app');
  return app ? <ApplicationPage key={app} kind="client" id={app} tab={query.get('tab')} /> : <ClientsList />;
}

function ClientsList() {
  const [search, setSearch] = useState('');
  const pages = useCursorPages([search]);
  const list = useLoad(() => request(ClientsQuery, { first: PAGE, after: pages.after, search: search || null }), [pages.after, search]);
  const [form, setForm] = useState<{ client?: ClientFieldsFragment }>();
  const [secret, setSecret] = useState<{ name: string; clientId: string; secret: string }>();
  const [confirm, setConfirm] = useState<Confirm>();
  const [notice, setNotice] = useState<string>();
  const action = useAction();
  const can = useCan();

  useEffect(() => {
    if (form) document.getElementById('client-form-title')?.focus();
  }, [form]);

  async function confirmed() {
    if (!confirm) return;
    const { kind, client } = confirm;
    const done = await action.run(async () => {
      if (kind === 'delete') {
        await request(DeleteClientMutation, { clientId: client.clientId });
        setNotice(`${client.name} is deleted; its tokens no longer work.`);
      } else {
        const r = (await request(RotateClientSecretMutation, { clientId: client.clientId })).rotateClientSecret;
        setSecret({ name: r.client.name, clientId: r.client.clientId, secret: r.clientSecret ?? '' });
        setNotice(`${client.name} has a new secret; the old one no longer works.`);
      }
      return true;
    });
    if (done) {
      setConfirm(undefined);
      list.reload();
    }
  }

  const conn = list.data?.clients;
  return (
    <>
      <div class="toolbar">
        <SearchBox id="client-search" label="Search clients by name or ID" value={search} onSearch={setSearch} />
        {can.manageApps ? (
          <button
            type="button"
            onClick={() => {
              setForm({});
              setSecret(undefined);
            }}
            aria-expanded={!!form && !form.client}
          >
            Register a client
          </button>
        ) : null}
      </div>
      <Notice text={notice} />
      {secret ? <NewSecret {...secret} onClose={() => setSecret(undefined)} /> : null}
      {form ? (
        <ClientForm
          key={form.client?.clientId ?? 'new'}
          client={form.client}
          ownerOnly={!can.manageApps}
          onCancel={() => setForm(undefined)}
          onDone={({ client, secret: s }) => {
            setForm(undefined);
            setNotice(form.client ? `${client.name} is saved.` : `${client.name} is registered.`);
            if (s) setSecret({ name: client.name, clientId: client.clientId, secret: s });
            list.reload();
          }}
        />
      ) : null}
      <section aria-labelledby="clients-list-title" aria-busy={list.loading}>
        <h2 id="clients-list-title" class="visually-hidden">
          Registered clients
        </h2>
        <ErrorNote error={list.error} />
        {list.loading && !conn ? <Loading>Loading clients…</Loading> : null}
        <Table
          label="Registered clients"
          columns={columns}
          rows={conn?.edges.map((e) => e.node)}
          rowKey={(c) => c.clientId}
          empty={search ? `No client matches “${search}”.` : 'No clients yet.'}
          actions={(c) => (
            <>
              {can.changeApp(c.owners) && can.holdClient(c) ? (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Edit ${c.name}`}
                  onClick={() => {
                    setForm({ client: c });
                    setSecret(undefined);
                  }}
                >
                  Edit
                </button>
              ) : null}
              {c.confidential && can.changeApp(c.owners) && can.holdClient(c) ? (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Rotate the secret of ${c.name}`}
                  onClick={() => {
                    action.clear();
                    setConfirm({ kind: 'rotate', client: c });
                  }}
                >
                  Rotate secret
                </button>
              ) : null}
              {BUILT_IN.has(c.clientId) || !can.manageApps || !can.holdClient(c) ? null : (
                <button
                  type="button"
                  class="danger"
                  aria-label={`Delete ${c.name}`}
                  onClick={() => {
                    action.clear();
                    setConfirm({ kind: 'delete', client: c });
                  }}
                >
                  Delete
                </button>
              )}
              <a href={href('clients', { app: c.clientId })} onClick={follow} aria-label={`Access and claims of ${c.name}`}>
                Access & claims
              </a>
              {can('audit:read') ? (
                <a href={href('audit', { clientId: c.clientId })} onClick={follow} aria-label={`Audit events of ${c.name}`}>
                  Audit
                </a>
              ) : null}
            </>
          )}
        />
        <Pager label="Clients" size={PAGE} pages={pages} conn={conn} />
      </section>
      {confirm ? (
        <Dialog
          title={confirm.kind === 'delete' ? `Delete ${confirm.client.name}?` : `Rotate the secret of ${confirm.client.name}?`}
          onClose={() => setConfirm(undefined)}
        >
          <p>
            {confirm.kind === 'delete'
              ? 'The client and every token issued to it stop working at once. This cannot be undone.'
              : 'A new secret is made and shown once; the current secret stops working at once.'}
          </p>
          <ErrorNote error={action.error} labels={clientLabels} />
          <div class="actions">
            <button type="button" class={confirm.kind === 'delete' ? 'danger' : ''} disabled={action.busy} onClick={confirmed}>
              {action.busy ? 'Working…' : confirm.kind === 'delete' ? 'Delete client' : 'Rotate secret'}
            </button>
            <button type="button" class="secondary" onClick={() => setConfirm(undefined)}>
              Cancel
            </button>
          </div>
        </Dialog>
      ) : null}
    </>
  );
}
