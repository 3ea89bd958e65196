/**
 * SCIM tokens (docs/scim-provisioning.md "Tokens"): list (backends:read); create (the secret shown once) and revoke
 * (keys:manage with users:write, users:credentials and users:enable: a token provisions users).
 */
import { useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { CreateScimTokenMutation, RevokeScimTokenMutation, ScimTokensQuery } from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { ConfirmDialog, useConfirm } from '../ui/confirm.tsx';
import { ErrorNote, Field, FormActions, Loading, Notice, SelectField, useAction, useLoad, when } from '../ui/kit.tsx';
import { SecretPanel } from '../ui/secret-panel.tsx';
import { Table, type Column } from '../ui/table.tsx';

type Token = ScimTokensQuery['scimTokens'][number];

const labels = { backend: 'Backend', description: 'Description' };

const columns: Array<Column<Token>> = [
  { header: 'Description', rowHeader: true, cell: (t) => t.description ?? '—' },
  { header: 'Backend', cell: (t) => <code>{t.backend}</code> },
  { header: 'Created', class: 'when', cell: (t) => when(t.createdAt) },
  { header: 'Last used', class: 'when', cell: (t) => (t.lastUsedAt ? when(t.lastUsedAt) : 'never') },
];

const nameOf = (t: Pick<Token, 'description' | 'backend'>) => t.description ?? `the token for ${t.backend}`;

/** The new token, on screen once: only its hash is stored. */
const NewToken = ({ token, backend, onClose }: { token: string; backend: string; onClose: () => void }) => (
  <SecretPanel
    id="scim-secret"
    title={`The new SCIM token for ${backend}`}
    values={[{ term: 'Token', id: 'new-scim-token', value: token, copy: 'Copy the SCIM token' }]}
    onClose={onClose}
  >
    <p role="alert">
      Copy it into the SCIM client (Entra ID's “Secret Token”, Okta's API token) now: it is shown only this once. Lost, it cannot be shown
      again; make a new one and revoke this one.
    </p>
  </SecretPanel>
);

function CreateForm({
  backends,
  onDone,
  onCancel,
}: {
  backends: string[];
  onDone: (token: string, backend: string) => void;
  onCancel: () => void;
}) {
  const [backend, setBackend] = useState(backends[0] ?? '');
  const [description, setDescription] = useState('');
  const create = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    const made = await create.run(
      async () => (await request(CreateScimTokenMutation, { backend, description: description || null })).createScimToken,
    );
    if (made) onDone(made.token, made.scimToken.backend);
  }

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="scim-create-title">
      <h2 id="scim-create-title">New SCIM token</h2>
      <SelectField
        id="scim-backend"
        label="Backend"
        value={backend}
        options={backends.map((b) => [b, b] as const)}
        onChange={setBackend}
        invalid={create.error?.field === 'backend'}
      />
      <Field
        id="scim-description"
        label="Description"
        name="description"
        value={description}
        onInput={setDescription}
        error={create.error}
        hint="Which client it is for, such as “Entra ID provisioning”."
      />
      <ErrorNote error={create.error} labels={labels} />
      <FormActions busy={create.busy} disabled={!backend} label="Create token" busyLabel="Creating…" onCancel={onCancel} />
    </form>
  );
}

export function ScimTokensSection() {
  const list = useLoad(() => request(ScimTokensQuery, {}), []);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ token: string; backend: string }>();
  const [notice, setNotice] = useState<string>();
  const revoke = useConfirm<Token>();
  const can = useCan();
  const manage = can.manageScimTokens;
  const tokens = list.data?.scimTokens;
  const backends = (list.data?.identityBackends ?? []).filter((b) => b.type === 'backend' && b.plugin === 'scim').map((b) => b.id);

  async function confirmed() {
    const revoking = revoke.asked;
    if (!revoking) return;
    const done = await revoke.run(async () => (await request(RevokeScimTokenMutation, { id: revoking.id })).revokeScimToken);
    if (done === undefined) return;
    setNotice(`${nameOf(revoking)} is revoked: requests carrying it are refused from now on.`);
    revoke.close();
    list.reload();
  }

  return (
    <section aria-busy={list.loading}>
      <div class="toolbar">
        <p class="lede">
          A SCIM client (Entra ID, Okta, an HR system) calls /scim/v2 with one of these; each reaches one backend of plugin scim.
        </p>
        {manage ? (
          <button
            type="button"
            disabled={backends.length === 0}
            aria-expanded={creating}
            onClick={() => {
              setCreating(true);
              setSecret(undefined);
            }}
          >
            New SCIM token
          </button>
        ) : null}
      </div>
      {manage && list.data && backends.length === 0 ? (
        <p class="hint">No backend of plugin scim is configured: add one (identity.backends) to make tokens for it.</p>
      ) : null}
      <Notice text={notice} />
      {secret ? <NewToken {...secret} onClose={() => setSecret(undefined)} /> : null}
      {creating ? (
        <CreateForm
          backends={backends}
          onCancel={() => setCreating(false)}
          onDone={(token, backend) => {
            setCreating(false);
            setSecret({ token, backend });
            setNotice(`A SCIM token for ${backend} is made.`);
            list.reload();
          }}
        />
      ) : null}
      <ErrorNote error={list.error} />
      {list.loading && !tokens ? <Loading>Loading SCIM tokens…</Loading> : null}
      <Table
        label="SCIM tokens"
        columns={columns}
        rows={tokens}
        rowKey={(t) => t.id}
        empty="No SCIM tokens yet."
        actions={
          manage
            ? (t) => (
                <button type="button" class="danger" aria-label={`Revoke ${nameOf(t)}`} onClick={() => revoke.ask(t)}>
                  Revoke
                </button>
              )
            : undefined
        }
      />
      {revoke.asked ? (
        <ConfirmDialog
          title={`Revoke ${nameOf(revoke.asked)}?`}
          confirm={revoke}
          label="Revoke token"
          busyLabel="Revoking…"
          onConfirm={confirmed}
        >
          <p>The SCIM client using it is refused from its next request on. This cannot be undone; a new token can be made.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
