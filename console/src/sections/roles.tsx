/**
 * Admin roles (docs/admin-api.md "Roles and permissions"), for a holder of roles:manage: the built-in
 * roles, and custom ones made, changed and deleted from the fixed list of permissions. A permission
 * the signed-in admin lacks cannot be put in a role (the API refuses it), so its box is not offered,
 * and a role giving one is theirs to read only.
 */
import { useEffect, useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import {
  type AdminRoleFieldsFragment,
  AdminRolesQuery,
  CreateAdminRoleMutation,
  DeleteAdminRoleMutation,
  UpdateAdminRoleMutation,
} from '../api/generated.ts';
import { loadViewer, type Permission, PERMISSIONS, useCan } from '../auth/permissions.ts';
import { ConfirmDialog, useConfirm } from '../ui/confirm.tsx';
import { Checkbox, ErrorNote, Field, FormActions, Loading, Notice, useAction, useLoad } from '../ui/kit.tsx';
import { Table, type Column } from '../ui/table.tsx';

/** What each permission lets its holder do, in the words of docs/admin-api.md. */
export const PERMISSION_WORDS: Record<Permission, string> = {
  'users:read': 'read users and groups',
  'users:write': 'create, change and delete users',
  'users:enable': 'enable and disable users',
  'users:credentials': 'set passwords and send reset mails',
  'users:mfa': 'reset second factors',
  'sessions:end': "end a user's sessions and tokens",
  'apps:read': 'read every application',
  'apps:write': 'register, change and delete applications, and name their owners',
  'apps:owned': 'change the applications whose owners name them',
  'keys:manage': 'rotate signing keys; with users:write, users:credentials and users:enable, make and revoke SCIM tokens',
  'backends:read': 'read the identity backends, signing keys and SCIM tokens',
  'audit:read': 'read the audit log',
  'webhooks:manage': 'register (with audit:read) and remove webhooks',
  'roles:manage': 'make admin roles and give them to users',
};

const labels = { name: 'Name', description: 'Description', permissions: 'Permissions' };

const columns: Array<Column<AdminRoleFieldsFragment>> = [
  { header: 'Role', rowHeader: true, cell: (r) => r.name },
  { header: 'Kind', cell: (r) => (r.builtIn ? 'built-in' : 'custom') },
  { header: 'Description', cell: (r) => r.description || '—' },
  { header: 'Permissions', cell: (r) => r.permissions.join(', ') },
];

function RoleForm({
  role,
  onDone,
  onCancel,
}: {
  role?: AdminRoleFieldsFragment;
  onDone: (r: AdminRoleFieldsFragment) => void;
  onCancel: () => void;
}) {
  const can = useCan();
  const [name, setName] = useState(role?.name ?? '');
  const [description, setDescription] = useState(role?.description ?? '');
  const [permissions, setPermissions] = useState<string[]>(role?.permissions ?? []);
  const save = useAction();
  useEffect(() => document.getElementById('role-form-title')?.focus(), []);

  async function submit(e: Event) {
    e.preventDefault();
    // In the fixed list's order, as the API answers them.
    const chosen = PERMISSIONS.filter((p) => permissions.includes(p));
    const done = await save.run(async () =>
      role
        ? (await request(UpdateAdminRoleMutation, { name: role.name, permissions: chosen, description })).updateAdminRole
        : (await request(CreateAdminRoleMutation, { name: name.trim(), permissions: chosen, description: description || null }))
            .createAdminRole,
    );
    if (done) onDone(done);
    else (document.querySelector('#role-form [aria-invalid="true"]') as HTMLElement | null)?.focus();
  }

  const invalid = save.error?.field === 'permissions';
  return (
    <form id="role-form" class="panel" onSubmit={submit} aria-labelledby="role-form-title" aria-busy={save.busy} noValidate>
      <h2 id="role-form-title" tabIndex={-1}>
        {role ? `Edit the role ${role.name}` : 'Create an admin role'}
      </h2>
      <div class="grid">
        <Field
          id="role-name"
          name="name"
          label="Name"
          value={name}
          onInput={setName}
          error={save.error}
          required
          disabled={!!role}
          hint="Letters, digits, _ . and -: the name users' roles and adminRoleGroups give it by."
        />
        <Field
          id="role-description"
          name="description"
          label="Description"
          value={description}
          onInput={setDescription}
          error={save.error}
        />
      </div>
      <fieldset class={`field${invalid ? ' invalid' : ''}`} aria-describedby={invalid ? 'role-permissions-error' : undefined}>
        <legend>Permissions</legend>
        <p class="hint">Only those you hold yourself: nobody makes a role stronger than they are.</p>
        {PERMISSIONS.filter((p) => can(p)).map((p) => (
          <Checkbox
            key={p}
            id={`role-permission-${p.replace(':', '-')}`}
            label={`${p}: ${PERMISSION_WORDS[p]}`}
            checked={permissions.includes(p)}
            onChange={(on) => setPermissions((x) => (on ? [...x, p] : x.filter((y) => y !== p)))}
          />
        ))}
        {invalid ? (
          <p class="field-error" id="role-permissions-error">
            {save.error!.message}
          </p>
        ) : null}
      </fieldset>
      <ErrorNote error={save.error} labels={labels} />
      <FormActions busy={save.busy} editing={!!role} label="Create role" onCancel={onCancel} />
    </form>
  );
}

export function RolesSection() {
  const can = useCan();
  const list = useLoad(() => request(AdminRolesQuery, {}), []);
  const [form, setForm] = useState<{ role?: AdminRoleFieldsFragment }>();
  const [notice, setNotice] = useState<string>();
  const remove = useConfirm<AdminRoleFieldsFragment>();
  // A role giving a permission one lacks is not theirs to change or delete (the API refuses it).
  const mine = (r: AdminRoleFieldsFragment) => !r.builtIn && r.permissions.every((p) => can(p as Permission));

  function changed(text: string) {
    setNotice(text);
    list.reload();
    // The console judges users' roles by the roles' permissions: read them again.
    void loadViewer();
  }

  async function confirmed() {
    const deleting = remove.asked;
    if (!deleting) return;
    const done = await remove.run(async () => (await request(DeleteAdminRoleMutation, { name: deleting.name })).deleteAdminRole);
    if (done === undefined) return;
    remove.close();
    changed(`The role ${deleting.name} is deleted; the users and groups naming it keep the name, which gives nothing now.`);
  }

  return (
    <section aria-busy={list.loading}>
      <div class="toolbar">
        <p class="lede">
          A user's roles (and their groups', through adminRoleGroups) give them permissions in this console and the admin API.
        </p>
        <button type="button" onClick={() => setForm({})} aria-expanded={!!form && !form.role}>
          Create an admin role
        </button>
      </div>
      <Notice text={notice} />
      {form ? (
        <RoleForm
          key={form.role?.name ?? 'new'}
          role={form.role}
          onCancel={() => setForm(undefined)}
          onDone={(r) => {
            setForm(undefined);
            changed(form.role ? `The role ${r.name} is saved.` : `The role ${r.name} is created.`);
          }}
        />
      ) : null}
      <ErrorNote error={list.error} />
      {list.loading && !list.data ? <Loading>Loading admin roles…</Loading> : null}
      <Table
        label="Admin roles"
        columns={columns}
        rows={list.data?.adminRoles}
        rowKey={(r) => r.name}
        empty="No admin roles."
        actions={(r) =>
          mine(r) ? (
            <>
              <button type="button" class="secondary" aria-label={`Edit the role ${r.name}`} onClick={() => setForm({ role: r })}>
                Edit
              </button>
              <button type="button" class="danger" aria-label={`Delete the role ${r.name}`} onClick={() => remove.ask(r)}>
                Delete
              </button>
            </>
          ) : null
        }
      />
      {remove.asked ? (
        <ConfirmDialog
          title={`Delete the role ${remove.asked.name}?`}
          confirm={remove}
          label="Delete role"
          busyLabel="Deleting…"
          onConfirm={confirmed}
        >
          <p>Its holders lose the permissions it gave them at their next request. The name stays on them and gives nothing.</p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}
