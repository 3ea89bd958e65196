/** An application's Access tab (who may use it) and Roles tab (which users hold which of its roles): docs/access-and-claims.md. */
import { useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { type AccessMode, BackendIdsQuery } from '../api/generated.ts';
import { Checkbox, ErrorNote, Field, Loading, Notice, useAction, useLoad } from '../ui/kit.tsx';
import { GroupsPicker, UsersPicker } from '../ui/pickers.tsx';
import {
  accessOf,
  type Application,
  type ApplicationChange,
  fieldLabels,
  focusInvalid,
  type PreviewState,
  rolesField,
  rolesOf,
  saveApplication,
} from './application-model.ts';
import { Preview } from './preview.tsx';

interface TabProps {
  app: Application;
  onSaved: (app: Application) => void;
}

/** A tab's save: the change, the notice after it, and the focus on the field an error names. */
function useSave(p: TabProps, panel: string) {
  const action = useAction();
  const [notice, setNotice] = useState<string>();
  async function save(change: ApplicationChange, done: string) {
    setNotice(undefined);
    const next = await action.run(() => saveApplication(p.app, change));
    if (next) {
      p.onSaved(next);
      setNotice(done);
    } else focusInvalid(panel);
  }
  return { ...action, notice, save };
}

function SaveButton({ busy, label }: { busy: boolean; label: string }) {
  return (
    <div class="actions">
      <button type="submit" disabled={busy}>
        {busy ? 'Saving…' : label}
      </button>
    </div>
  );
}

export function AccessTab(p: TabProps & { preview: PreviewState }) {
  const stored = accessOf(p.app);
  const [mode, setMode] = useState<AccessMode>(stored.mode);
  const [groups, setGroups] = useState(stored.groups);
  const [users, setUsers] = useState(stored.users);
  const [backends, setBackends] = useState(stored.backends);
  const known = useLoad(() => request(BackendIdsQuery, {}), []);
  const s = useSave(p, 'panel-access');
  const err = s.error;
  // Backends named by the policy that are not configured now stay listed, so they can be removed.
  const backendIds = [...new Set([...(known.data?.identityBackends.map((b) => b.id) ?? []), ...backends])];
  const typeOf = (id: string) => known.data?.identityBackends.find((b) => b.id === id)?.type;

  return (
    <>
      <form
        id="access-form"
        class="panel"
        aria-labelledby="access-title"
        aria-busy={s.busy}
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          const policy = mode === 'EVERYONE' ? { mode, groups: [], users: [], backends: [] } : { mode, groups, users, backends };
          void s.save({ access: policy }, `Access to ${p.app.name} is saved.`);
        }}
      >
        <h3 id="access-title">Who may use {p.app.name}</h3>
        <fieldset class="field">
          <legend>Access</legend>
          <div class="check">
            <input type="radio" id="access-everyone" name="mode" checked={mode === 'EVERYONE'} onChange={() => setMode('EVERYONE')} />
            <label for="access-everyone">Everyone who can sign in</label>
          </div>
          <div class="check">
            <input type="radio" id="access-assigned" name="mode" checked={mode === 'ASSIGNED'} onChange={() => setMode('ASSIGNED')} />
            <label for="access-assigned">Only the groups, users and backends assigned below</label>
          </div>
        </fieldset>
        {mode === 'ASSIGNED' ? (
          <div class="grid">
            <GroupsPicker
              id="access-groups"
              name="access.groups"
              label="Groups"
              hint="Members may use it (nested groups as the directory resolves them). Names and DNs compare without case."
              value={groups}
              onChange={setGroups}
              error={err}
            />
            <UsersPicker
              id="access-users"
              name="access.users"
              label="Users"
              hint="These users may use it, whatever their groups."
              value={users}
              onChange={setUsers}
              error={err}
            />
            <fieldset class="field">
              <legend>Backends</legend>
              <p class="hint">Every user of a backend or upstream checked here may use it.</p>
              {known.loading && !known.data ? <Loading>Loading the backends…</Loading> : null}
              <ErrorNote error={known.error} />
              {backendIds.map((b) => (
                <Checkbox
                  key={b}
                  id={`access-backend-${b}`}
                  label={typeOf(b) === 'upstream' ? `${b} (upstream)` : typeOf(b) ? b : `${b} (not configured)`}
                  checked={backends.includes(b)}
                  onChange={(on) => setBackends((x) => (on ? [...x, b] : x.filter((y) => y !== b)))}
                />
              ))}
            </fieldset>
          </div>
        ) : null}
        {mode === 'ASSIGNED' && groups.length + users.length + backends.length === 0 ? (
          <p class="hint">Nobody is assigned yet: saved like this, no one may use {p.app.name}.</p>
        ) : null}
        <ErrorNote error={err} labels={fieldLabels(err?.field)} />
        <Notice text={s.notice} />
        <SaveButton busy={s.busy} label="Save access" />
      </form>
      <Preview
        id="access-preview"
        kind={p.app.kind}
        applicationId={p.app.id}
        applicationName={p.app.name}
        user={p.preview.user}
        onUser={p.preview.onUser}
        version={p.preview.version}
        toldOpen={false}
      />
    </>
  );
}

interface RoleRow {
  key: number;
  name: string;
  groups: string[];
  users: string[];
}

let nextKey = 0;

export function RolesTab(p: TabProps) {
  const [rows, setRows] = useState<RoleRow[]>(() => rolesOf(p.app).map((r) => ({ key: nextKey++, ...r })));
  const s = useSave(p, 'panel-roles');
  const err = s.error;
  const field = rolesField(p.app);
  const change = (key: number, patch: Partial<RoleRow>) => setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  const carried =
    p.app.kind === 'client'
      ? 'in the roles claim of its id_tokens, userinfo, JWT access tokens and introspection'
      : `in the ${p.app.sp.rolesAttribute} attribute of its assertions`;

  return (
    <form
      id="roles-form"
      class="panel"
      aria-labelledby="roles-title"
      aria-busy={s.busy}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void s.save(
          { roles: rows.map(({ name, groups, users }) => ({ name: name.trim(), groups, users })) },
          `The roles of ${p.app.name} are saved.`,
        );
      }}
    >
      <h3 id="roles-title">Roles of {p.app.name}</h3>
      <p class="hint">
        A user holds a role when named or in one of its groups; {p.app.name} receives the user's roles {carried}.
      </p>
      {rows.length === 0 ? <p class="empty">No roles yet.</p> : null}
      <div class="rows">
        {rows.map((r, i) => (
          <fieldset key={r.key} class="row">
            <legend>
              Role {i + 1}
              {r.name ? `: ${r.name}` : ''}
            </legend>
            <div class="grid">
              <Field
                id={`role-${i}-name`}
                name={`${field}.${i}.name`}
                label="Role name"
                value={r.name}
                onInput={(name) => change(r.key, { name })}
                error={err}
              />
              <GroupsPicker
                id={`role-${i}-groups`}
                name={`${field}.${i}.groups`}
                label="Groups holding it"
                value={r.groups}
                onChange={(groups) => change(r.key, { groups })}
                error={err}
              />
              <UsersPicker
                id={`role-${i}-users`}
                name={`${field}.${i}.users`}
                label="Users holding it"
                value={r.users}
                onChange={(users) => change(r.key, { users })}
                error={err}
              />
            </div>
            <button type="button" class="secondary" onClick={() => setRows((rs) => rs.filter((x) => x.key !== r.key))}>
              Remove role {i + 1}
            </button>
          </fieldset>
        ))}
      </div>
      <div class="actions">
        <button
          type="button"
          class="secondary"
          onClick={() => setRows((rs) => [...rs, { key: nextKey++, name: '', groups: [], users: [] }])}
        >
          Add a role
        </button>
      </div>
      <ErrorNote error={err} labels={fieldLabels(err?.field)} />
      <Notice text={s.notice} />
      <SaveButton busy={s.busy} label="Save roles" />
    </form>
  );
}

export { SaveButton, useSave, type TabProps };
