/** An application's Access tab (who may use it) and Roles tab (which users hold which of its roles): docs/access-and-claims.md. */
import type { ComponentChildren } from 'preact';
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
  /** The signed-in admin may read the application but not change it (an auditor): the fields are disabled, no save button. */
  readOnly: boolean;
  /** May change only what an owner may (apps:owned without apps:write): the fields an owner may not give are disabled and not sent. */
  ownerOnly: boolean;
  /** Whether the preview may be asked for (it reads users and applications). */
  preview?: PreviewState;
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

/** A tab's form: its title, its fields, then the error, the notice and the save button. */
function TabForm(p: {
  /** `claims`: the form is claims-form, titled by claims-title. */
  name: string;
  title: string;
  save: ReturnType<typeof useSave>;
  saveLabel: string;
  onSubmit: () => void;
  readOnly: boolean;
  children: ComponentChildren;
}) {
  const { busy, error, notice } = p.save;
  if (p.readOnly) {
    return (
      <form id={`${p.name}-form`} class="panel" aria-labelledby={`${p.name}-title`} onSubmit={(e) => e.preventDefault()}>
        <h3 id={`${p.name}-title`}>{p.title}</h3>
        <p class="hint">Read only: changing it needs apps:write, or being one of its owners with apps:owned.</p>
        {/* A disabled fieldset disables every control in it, the pickers' and the rows' buttons included. */}
        <fieldset disabled class="read-only">
          <legend class="visually-hidden">{p.title}</legend>
          {p.children}
        </fieldset>
      </form>
    );
  }
  return (
    <form
      id={`${p.name}-form`}
      class="panel"
      aria-labelledby={`${p.name}-title`}
      aria-busy={busy}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        p.onSubmit();
      }}
    >
      <h3 id={`${p.name}-title`}>{p.title}</h3>
      {p.children}
      <ErrorNote error={error} labels={fieldLabels(error?.field)} />
      <Notice text={notice} />
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : p.saveLabel}
        </button>
      </div>
    </form>
  );
}

/** A tab's preview of what the application would be told about a user; none for an admin who may not read users. */
function TabPreview({ app, preview, id, toldOpen }: { app: Application; preview?: PreviewState; id: string; toldOpen: boolean }) {
  if (!preview) return null;
  return (
    <Preview
      id={id}
      kind={app.kind}
      applicationId={app.id}
      applicationName={app.name}
      user={preview.user}
      onUser={preview.onUser}
      version={preview.version}
      toldOpen={toldOpen}
    />
  );
}

let nextKey = 0;
/** A key for a new row, unique in the console. */
const newKey = () => nextKey++;

/** Rows a tab edits, each with its key. */
function useRows<R extends { key: number }>(initial: () => R[]) {
  const [rows, setRows] = useState<R[]>(initial);
  return {
    rows,
    change: (key: number, patch: Partial<R>) => setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r))),
    remove: (key: number) => setRows((rs) => rs.filter((r) => r.key !== key)),
    add: (...more: R[]) => setRows((rs) => [...rs, ...more]),
  };
}

/** A tab's rows (roles, claims, attributes): each a numbered fieldset with its fields and its remove button; then the add buttons. */
function RowList<R extends { key: number }>(p: {
  rows: R[];
  /** What a row is: `Claim` gives the legend "Claim 1: email" and the button "Remove claim 1". */
  noun: string;
  /** The row's name, after its number in the legend. */
  nameOf: (row: R) => string;
  /** What is said when there is no row. */
  empty: string;
  onRemove: (key: number) => void;
  fields: (row: R, i: number) => ComponentChildren;
  /** The add buttons: label and action. */
  adds: Array<[string, () => void]>;
}) {
  return (
    <>
      {p.rows.length === 0 ? <p class="empty">{p.empty}</p> : null}
      <div class="rows">
        {p.rows.map((r, i) => (
          <fieldset key={r.key} class="row">
            <legend>
              {p.noun} {i + 1}
              {p.nameOf(r) ? `: ${p.nameOf(r)}` : ''}
            </legend>
            <div class="grid">{p.fields(r, i)}</div>
            <button type="button" class="secondary" onClick={() => p.onRemove(r.key)}>
              Remove {p.noun.toLowerCase()} {i + 1}
            </button>
          </fieldset>
        ))}
      </div>
      <div class="actions">
        {p.adds.map(([label, onClick]) => (
          <button key={label} type="button" class="secondary" onClick={onClick}>
            {label}
          </button>
        ))}
      </div>
    </>
  );
}

export function AccessTab(p: TabProps) {
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
      <TabForm
        name="access"
        title={`Who may use ${p.app.name}`}
        save={s}
        readOnly={p.readOnly}
        saveLabel="Save access"
        onSubmit={() => {
          const policy = mode === 'EVERYONE' ? { mode, groups: [], users: [], backends: [] } : { mode, groups, users, backends };
          void s.save({ access: policy }, `Access to ${p.app.name} is saved.`);
        }}
      >
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
      </TabForm>
      <TabPreview app={p.app} preview={p.preview} id="access-preview" toldOpen={false} />
    </>
  );
}

interface RoleRow {
  key: number;
  name: string;
  groups: string[];
  users: string[];
}

export function RolesTab(p: TabProps) {
  const { rows, change, remove, add } = useRows<RoleRow>(() => rolesOf(p.app).map((r) => ({ key: newKey(), ...r })));
  const s = useSave(p, 'panel-roles');
  const err = s.error;
  const field = rolesField(p.app);
  const carried =
    p.app.kind === 'client'
      ? 'in the roles claim of its id_tokens, userinfo, JWT access tokens and introspection'
      : `in the ${p.app.sp.rolesAttribute} attribute of its assertions`;

  return (
    <TabForm
      name="roles"
      title={`Roles of ${p.app.name}`}
      save={s}
      readOnly={p.readOnly}
      saveLabel="Save roles"
      onSubmit={() =>
        void s.save(
          { roles: rows.map(({ name, groups, users }) => ({ name: name.trim(), groups, users })) },
          `The roles of ${p.app.name} are saved.`,
        )
      }
    >
      <p class="hint">
        A user holds a role when named or in one of its groups; {p.app.name} receives the user's roles {carried}.
      </p>
      <RowList
        rows={rows}
        noun="Role"
        nameOf={(r) => r.name}
        empty="No roles yet."
        onRemove={remove}
        adds={[['Add a role', () => add({ key: newKey(), name: '', groups: [], users: [] })]]}
        fields={(r, i) => {
          const at = (f: string) => ({ id: `role-${i}-${f}`, name: `${field}.${i}.${f}`, error: err });
          return (
            <>
              <Field {...at('name')} label="Role name" value={r.name} onInput={(name) => change(r.key, { name })} />
              <GroupsPicker {...at('groups')} label="Groups holding it" value={r.groups} onChange={(groups) => change(r.key, { groups })} />
              <UsersPicker {...at('users')} label="Users holding it" value={r.users} onChange={(users) => change(r.key, { users })} />
            </>
          );
        }}
      />
    </TabForm>
  );
}

export { newKey, RowList, type TabProps, TabForm, TabPreview, useRows, useSave };
