/**
 * Users: list, search, pages; create; edit (roles, and the profile of database users); disable and
 * enable; set a password or send a reset mail; reset second factors; revoke tokens. Each button only
 * for a holder of its permission (docs/admin-console.md "What each role sees").
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, request } from '../api/graphql.ts';
import {
  CreateUserMutation,
  ResetUserMfaMutation,
  RevokeTokensMutation,
  SendPasswordResetMutation,
  SetUserPasswordMutation,
  UpdateUserMutation,
  UsersQuery,
  type UserFieldsFragment,
} from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { account } from '../auth/session.ts';
import {
  Dialog,
  ErrorNote,
  Field,
  FormActions,
  Loading,
  Pager,
  SearchBox,
  useAction,
  useCursorPages,
  useLoad,
  words,
  Notice,
} from '../ui/kit.tsx';
import { follow, href } from '../ui/router.ts';
import { Table, type Column } from '../ui/table.tsx';

const PAGE = 20;
const labels: Record<string, string> = {
  username: 'Username',
  password: 'Password',
  email: 'Email',
  displayName: 'Display name',
  roles: 'Roles',
  id: 'User',
};

function UserForm({
  user,
  onDone,
  onCancel,
}: {
  user?: UserFieldsFragment;
  onDone: (u: UserFieldsFragment) => void;
  onCancel: () => void;
}) {
  const [username, setUsername] = useState(user?.username ?? '');
  const [password, setPassword] = useState('');
  const [email, setEmail] = useState(user?.email ?? '');
  const [displayName, setDisplayName] = useState(user?.displayName ?? '');
  const [roles, setRoles] = useState((user?.roles ?? []).join(' '));
  const save = useAction();
  const readOnly = user?.readOnly ?? false;
  // Admin roles are roles:manage's to give (the API refuses the field to anyone else).
  const giveRoles = useCan()('roles:manage');
  useEffect(() => document.getElementById('user-form-title')?.focus(), []);

  async function submit(e: Event) {
    e.preventDefault();
    const done = await save.run(async () => {
      const given = giveRoles ? { roles: words(roles) } : {};
      if (!user) {
        const input = { username, password, email: email || null, displayName: displayName || null, ...given };
        return (await request(CreateUserMutation, { input })).createUser;
      }
      const input = readOnly ? given : { username, email: email || null, displayName: displayName || null, ...given };
      return (await request(UpdateUserMutation, { id: user.id, input })).updateUser;
    });
    if (done) onDone(done);
    else (document.querySelector('#user-form [aria-invalid="true"]') as HTMLElement | null)?.focus();
  }

  return (
    <form id="user-form" class="panel" onSubmit={submit} aria-labelledby="user-form-title" aria-busy={save.busy} noValidate>
      <h2 id="user-form-title" tabIndex={-1}>
        {user ? `Edit ${user.username}` : 'Create a user'}
      </h2>
      {readOnly ? <p class="hint">This user comes from the “{user!.backend}” backend: only the roles can change here.</p> : null}
      <div class="grid">
        <Field
          id="user-username"
          name="username"
          label="Username"
          value={username}
          onInput={setUsername}
          error={save.error}
          required
          disabled={readOnly}
        />
        {user ? null : (
          <Field
            id="user-password"
            name="password"
            label="Password"
            type="password"
            autoComplete="new-password"
            value={password}
            onInput={setPassword}
            error={save.error}
            required
            hint="8 to 1024 characters."
          />
        )}
        <Field
          id="user-email"
          name="email"
          label="Email"
          type="email"
          value={email}
          onInput={setEmail}
          error={save.error}
          disabled={readOnly}
        />
        <Field
          id="user-display-name"
          name="displayName"
          label="Display name"
          value={displayName}
          onInput={setDisplayName}
          error={save.error}
          disabled={readOnly}
        />
        {giveRoles ? (
          <Field
            id="user-roles"
            name="roles"
            label="Roles"
            value={roles}
            onInput={setRoles}
            error={save.error}
            hint="Separated by spaces. Admin roles (admin, helpdesk, auditor, app-owner, or one made under Admin roles) open this console and the admin API; only those whose permissions you hold can be given or taken."
          />
        ) : null}
      </div>
      <ErrorNote error={save.error} labels={labels} />
      <FormActions busy={save.busy} editing={Boolean(user)} label="Create user" onCancel={onCancel} />
    </form>
  );
}

type Ask = { kind: 'password' | 'reset' | 'revoke' | 'mfa'; user: UserFieldsFragment };

const hasFactor = (u: UserFieldsFragment) => u.mfa.totp || u.mfa.passkeys > 0;
const askTitle = (a: Ask) =>
  ({
    password: `Set the password of ${a.user.username}`,
    reset: `Send ${a.user.username} a password reset?`,
    mfa: `Reset the second factors of ${a.user.username}?`,
    revoke: `Revoke the tokens of ${a.user.username}?`,
  })[a.kind];
const askButton = { password: 'Set password', reset: 'Send reset mail', revoke: 'Revoke tokens', mfa: 'Reset second factors' } as const;

/** The signed-in user's own row is marked "you". */
const columns = (myId: string | undefined): Array<Column<UserFieldsFragment>> => [
  {
    header: 'Username',
    rowHeader: true,
    cell: (u) => (
      <>
        {u.username}
        {u.id === myId ? <span class="tag">you</span> : null}
      </>
    ),
  },
  { header: 'Name', cell: (u) => u.displayName ?? '—' },
  { header: 'Email', cell: (u) => u.email ?? '—' },
  { header: 'Backend', cell: (u) => u.backend },
  { header: 'Roles', cell: (u) => u.roles.join(', ') || '—' },
  { header: 'Status', cell: (u) => <span class={`badge ${u.disabled ? 'off' : 'on'}`}>{u.disabled ? 'disabled' : 'active'}</span> },
];

export function UsersSection() {
  const [search, setSearch] = useState('');
  const pages = useCursorPages([search]);
  const list = useLoad(() => request(UsersQuery, { first: PAGE, after: pages.after, search: search || null }), [pages.after, search]);
  const [form, setForm] = useState<{ user?: UserFieldsFragment }>();
  const [ask, setAsk] = useState<Ask>();
  const [password, setPassword] = useState('');
  const [notice, setNotice] = useState<string>();
  const action = useAction();
  const rowAction = useAction();
  const me = account.use();
  const can = useCan();
  // Acting on oneself is always allowed; on another, not when their roles reach beyond one's own.
  const mayAct = (u: UserFieldsFragment) => u.id === me?.userId || can.actOn(u);
  const askAbout = (kind: Ask['kind'], user: UserFieldsFragment) => {
    action.clear();
    setAsk({ kind, user });
  };

  async function toggle(u: UserFieldsFragment) {
    const done = await rowAction.run(() => request(UpdateUserMutation, { id: u.id, input: { disabled: !u.disabled } }));
    if (done) {
      setNotice(`${u.username} is ${u.disabled ? 'enabled' : 'disabled'}.`);
      list.reload();
    }
  }

  async function confirmed(e: Event) {
    e.preventDefault();
    if (!ask) return;
    const { kind, user } = ask;
    const done = await action.run(async () => {
      if (kind === 'password') {
        await request(SetUserPasswordMutation, { id: user.id, password });
        setNotice(`${user.username} has a new password; their tokens are revoked.`);
      } else if (kind === 'reset') {
        const sent = (await request(SendPasswordResetMutation, { userId: user.id })).sendPasswordReset;
        // False: the mail server did not take it (the server logged and audited that).
        if (!sent) throw new ApiError('MAIL', 'the mail server did not take the mail; try again in a while');
        setNotice(`A password reset is on its way to ${user.username}.`);
      } else if (kind === 'mfa') {
        await request(ResetUserMfaMutation, { id: user.id });
        setNotice(`${user.username} has no second factor now: they sign in with their password and can enrol again.`);
        list.reload();
      } else {
        const n = (await request(RevokeTokensMutation, { userId: user.id })).revokeTokens;
        setNotice(`${n} token${n === 1 ? '' : 's'} of ${user.username} revoked.`);
      }
      return true;
    });
    if (done) setAsk(undefined);
  }

  const conn = list.data?.users;
  return (
    <>
      <div class="toolbar">
        <SearchBox id="user-search" label="Search users by name or email" value={search} onSearch={setSearch} />
        {can('users:write') ? (
          <button type="button" onClick={() => setForm({})} aria-expanded={!!form && !form.user}>
            Create a user
          </button>
        ) : null}
      </div>
      <Notice text={notice} />
      {form ? (
        <UserForm
          key={form.user?.id ?? 'new'}
          user={form.user}
          onCancel={() => setForm(undefined)}
          onDone={(u) => {
            setNotice(form.user ? `${u.username} is saved.` : `${u.username} is created.`);
            setForm(undefined);
            list.reload();
          }}
        />
      ) : null}
      <section aria-labelledby="users-list-title" aria-busy={list.loading}>
        <h2 id="users-list-title" class="visually-hidden">
          Users
        </h2>
        <ErrorNote error={list.error} />
        <ErrorNote error={rowAction.error} labels={labels} />
        {list.loading && !conn ? <Loading>Loading users…</Loading> : null}
        <Table
          label="Users"
          columns={columns(me?.userId)}
          rows={conn?.edges.map((e) => e.node)}
          rowKey={(u) => u.id}
          rowClass={(u) => (u.disabled ? 'disabled' : undefined)}
          empty={search ? `No user matches “${search}”.` : 'No users yet.'}
          actions={(u) => (
            <>
              {can('users:write') && mayAct(u) && (!u.readOnly || can('roles:manage')) ? (
                <button type="button" class="secondary" aria-label={`Edit ${u.username}`} onClick={() => setForm({ user: u })}>
                  Edit
                </button>
              ) : null}
              {u.id === me?.userId || !mayAct(u) || !can.any('users:write', 'users:enable') ? null : (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`${u.disabled ? 'Enable' : 'Disable'} ${u.username}`}
                  disabled={rowAction.busy}
                  onClick={() => toggle(u)}
                >
                  {u.disabled ? 'Enable' : 'Disable'}
                </button>
              )}
              {u.readOnly || !mayAct(u) || !can('users:credentials') ? null : (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Set the password of ${u.username}`}
                  onClick={() => {
                    setPassword('');
                    askAbout('password', u);
                  }}
                >
                  Set password
                </button>
              )}
              {u.email && !u.disabled && mayAct(u) && can('users:credentials') ? (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Send ${u.username} a password reset`}
                  onClick={() => askAbout('reset', u)}
                >
                  Send password reset
                </button>
              ) : null}
              {hasFactor(u) && mayAct(u) && can('users:mfa') ? (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Reset the second factors of ${u.username}`}
                  onClick={() => askAbout('mfa', u)}
                >
                  Reset MFA
                </button>
              ) : null}
              {mayAct(u) && can('sessions:end') ? (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Revoke the tokens of ${u.username}`}
                  onClick={() => askAbout('revoke', u)}
                >
                  Revoke tokens
                </button>
              ) : null}
              {can('audit:read') ? (
                <a href={href('audit', { userId: u.id })} onClick={follow} aria-label={`Audit events of ${u.username}`}>
                  Audit
                </a>
              ) : null}
            </>
          )}
        />
        <Pager label="Users" size={PAGE} pages={pages} conn={conn} />
      </section>
      {ask ? (
        <Dialog title={askTitle(ask)} onClose={() => setAsk(undefined)}>
          <form onSubmit={confirmed} noValidate>
            {ask.kind === 'password' ? (
              <Field
                id="new-password"
                name="password"
                label="New password"
                type="password"
                autoComplete="new-password"
                value={password}
                onInput={setPassword}
                error={action.error}
                hint="8 to 1024 characters. Their tokens are revoked."
              />
            ) : ask.kind === 'reset' ? (
              <p>
                {ask.user.username} gets a mail at {ask.user.email} with a link to choose a new password, good once for 15 minutes, as
                “Forgot your password?” sends. Their password keeps working until they use it.
              </p>
            ) : ask.kind === 'mfa' ? (
              <p>
                Removes the authenticator app, every passkey and the recovery codes of {ask.user.username} (for a lost phone). Until they
                enrol again they sign in with their password alone, unless a policy asks for a second factor.
              </p>
            ) : (
              <p>Every access and refresh token of {ask.user.username} stops working at once. Their sign-on session stays.</p>
            )}
            <ErrorNote error={action.error} labels={labels} />
            <div class="actions">
              <button type="submit" disabled={action.busy}>
                {action.busy ? 'Working…' : askButton[ask.kind]}
              </button>
              <button type="button" class="secondary" onClick={() => setAsk(undefined)}>
                Cancel
              </button>
            </div>
          </form>
        </Dialog>
      ) : null}
    </>
  );
}
