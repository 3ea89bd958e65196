/** Webhooks (docs/webhooks.md): list, register (the signing secret shown once), delete, and each endpoint's deliveries. */
import { useEffect, useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { DeleteWebhookMutation, RegisterWebhookMutation, WebhookDeliveriesQuery, WebhooksQuery } from '../api/generated.ts';
import { ConfirmDialog, useConfirm } from '../ui/confirm.tsx';
import { ErrorNote, Field, FormActions, Loading, Notice, Pager, useAction, useCursorPages, useLoad, when, words } from '../ui/kit.tsx';
import { useCan } from '../auth/permissions.ts';
import { SecretPanel } from '../ui/secret-panel.tsx';
import { Table, type Column } from '../ui/table.tsx';

type Hook = WebhooksQuery['webhooks'][number];
type Delivery = WebhookDeliveriesQuery['webhookDeliveries']['edges'][number]['node'];

const PAGE = 25;
const labels = { url: 'URL', events: 'Events', description: 'Description' };
const STATUS: Record<Delivery['status'], string> = {
  DELIVERED: 'Delivered',
  FAILED: 'Failed, tried again',
  PENDING: 'Next try',
  GIVEN_UP: 'Given up',
};

const nameOf = (h: Pick<Hook, 'description' | 'url'>) => h.description ?? h.url;

const columns: Array<Column<Hook>> = [
  { header: 'Endpoint', rowHeader: true, class: 'uris', cell: (h) => <code>{h.url}</code> },
  { header: 'Events', cell: (h) => h.events.join(', ') },
  { header: 'Description', cell: (h) => h.description ?? '—' },
  {
    header: 'State',
    cell: (h) => (h.failingSince ? <strong>failing since {when(h.failingSince)}</strong> : 'delivering'),
  },
];

const deliveryColumns: Array<Column<Delivery>> = [
  { header: 'When', class: 'when', cell: (d) => <time dateTime={d.at}>{when(d.at)}</time> },
  {
    header: 'Event',
    rowHeader: true,
    cell: (d) => (
      <>
        {d.kind} <span class="hint">#{d.eventId}</span>
      </>
    ),
  },
  { header: 'Try', cell: (d) => (d.attempt === 0 ? 'none' : String(d.attempt)) },
  { header: 'Status', cell: (d) => STATUS[d.status] },
  { header: 'Answer', cell: (d) => (d.httpStatus === null || d.httpStatus === undefined ? '—' : `HTTP ${d.httpStatus}`) },
  { header: 'Why', cell: (d) => d.error ?? '—' },
];

/** The new signing secret, on screen once: the receiver needs it to verify the signatures. */
const NewSecret = ({ secret, url, onClose }: { secret: string; url: string; onClose: () => void }) => (
  <SecretPanel
    id="webhook-secret"
    title="The new webhook's signing secret"
    values={[{ term: 'Secret', id: 'new-webhook-secret', value: secret, copy: 'Copy the signing secret' }]}
    onClose={onClose}
  >
    <p>
      For <code>{url}</code>
    </p>
    <p role="alert">
      Give it to the receiver now, to verify each request's webhook-signature: it is shown only this once. Lost, it cannot be shown again;
      register the endpoint again and delete this one.
    </p>
  </SecretPanel>
);

function RegisterForm({ onDone, onCancel }: { onDone: (secret: string, hook: Hook) => void; onCancel: () => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState('*');
  const [description, setDescription] = useState('');
  const register = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    const made = await register.run(
      async () =>
        (await request(RegisterWebhookMutation, { url, events: words(events), description: description || null })).registerWebhook,
    );
    if (made) onDone(made.secret, made.webhook);
  }

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="webhook-register-title">
      <h2 id="webhook-register-title">Register a webhook</h2>
      <Field id="webhook-url" label="URL" name="url" type="url" value={url} onInput={setUrl} error={register.error} required />
      <Field
        id="webhook-events"
        label="Events"
        name="events"
        value={events}
        onInput={setEvents}
        error={register.error}
        hint="Kinds of audit event, separated by spaces or commas: * for every one, user.* for every kind starting user., or one kind such as login.failure."
      />
      <Field
        id="webhook-description"
        label="Description"
        name="description"
        value={description}
        onInput={setDescription}
        error={register.error}
        hint="Who runs the endpoint, or what it is for."
      />
      <ErrorNote error={register.error} labels={labels} />
      <FormActions busy={register.busy} disabled={!url} label="Register webhook" busyLabel="Registering…" onCancel={onCancel} />
    </form>
  );
}

/** One endpoint's attempts, newest first (the next try of a failed event first of all). */
function Deliveries({ hook, onClose }: { hook: Hook; onClose: () => void }) {
  const pages = useCursorPages([hook.id]);
  const list = useLoad(
    () => request(WebhookDeliveriesQuery, { webhookId: hook.id, first: PAGE, after: pages.after }),
    [hook.id, pages.after],
  );
  const conn = list.data?.webhookDeliveries;
  useEffect(() => document.getElementById('webhook-deliveries-title')?.focus(), [hook.id]);
  return (
    <section class="panel" aria-labelledby="webhook-deliveries-title" aria-busy={list.loading}>
      <h2 id="webhook-deliveries-title" tabIndex={-1}>
        Deliveries to {nameOf(hook)}
      </h2>
      <div class="actions">
        <button type="button" class="secondary" onClick={list.reload}>
          Refresh
        </button>
        <button type="button" class="secondary" onClick={onClose}>
          Close
        </button>
      </div>
      <ErrorNote error={list.error} />
      {list.loading && !conn ? <Loading>Loading deliveries…</Loading> : null}
      <Table
        label={`Deliveries to ${nameOf(hook)}`}
        columns={deliveryColumns}
        rows={conn?.edges.map((e) => e.node)}
        rowKey={(d) => d.id}
        empty="Nothing sent yet: an event of the kinds it receives goes out within a second."
      />
      <Pager label="Deliveries" size={PAGE} pages={pages} conn={conn} />
    </section>
  );
}

export function WebhooksSection() {
  const list = useLoad(() => request(WebhooksQuery, {}), []);
  const [registering, setRegistering] = useState(false);
  const [secret, setSecret] = useState<{ secret: string; url: string }>();
  const [watching, setWatching] = useState<Hook>();
  const [notice, setNotice] = useState<string>();
  const remove = useConfirm<Hook>();
  const hooks = list.data?.webhooks;
  // Registering one sends it the audit trail: that takes audit:read besides webhooks:manage.
  const mayRegister = useCan().registerWebhooks;

  async function confirmed() {
    const deleting = remove.asked;
    if (!deleting) return;
    const done = await remove.run(async () => (await request(DeleteWebhookMutation, { id: deleting.id })).deleteWebhook);
    if (done === undefined) return;
    setNotice(`${nameOf(deleting)} is deleted: nothing more is sent to it.`);
    if (watching?.id === deleting.id) setWatching(undefined);
    remove.close();
    list.reload();
  }

  return (
    <section aria-busy={list.loading}>
      <div class="toolbar">
        <p class="lede">Each endpoint is sent the audit events it asks for, signed, in order, retried for 24 hours.</p>
        {mayRegister ? (
          <button
            type="button"
            aria-expanded={registering}
            onClick={() => {
              setRegistering(true);
              setSecret(undefined);
            }}
          >
            Register webhook
          </button>
        ) : null}
      </div>
      <Notice text={notice} />
      {secret ? <NewSecret {...secret} onClose={() => setSecret(undefined)} /> : null}
      {registering ? (
        <RegisterForm
          onCancel={() => setRegistering(false)}
          onDone={(s, hook) => {
            setRegistering(false);
            setSecret({ secret: s, url: hook.url });
            setNotice(`${hook.url} is registered.`);
            list.reload();
          }}
        />
      ) : null}
      <ErrorNote error={list.error} />
      {list.loading && !hooks ? <Loading>Loading webhooks…</Loading> : null}
      <Table
        label="Webhooks"
        columns={columns}
        rows={hooks}
        rowKey={(h) => h.id}
        empty="No webhooks yet."
        actions={(h) => (
          <>
            <button type="button" class="secondary" aria-label={`Deliveries to ${nameOf(h)}`} onClick={() => setWatching(h)}>
              Deliveries
            </button>{' '}
            <button type="button" class="danger" aria-label={`Delete ${nameOf(h)}`} onClick={() => remove.ask(h)}>
              Delete
            </button>
          </>
        )}
      />
      {watching ? <Deliveries key={watching.id} hook={watching} onClose={() => setWatching(undefined)} /> : null}
      {remove.asked ? (
        <ConfirmDialog
          title={`Delete ${nameOf(remove.asked)}?`}
          confirm={remove}
          label="Delete webhook"
          busyLabel="Deleting…"
          onConfirm={confirmed}
        >
          <p>
            Nothing more is sent to it, and the record of its deliveries goes too. To send to it again, register it anew (a new secret).
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
