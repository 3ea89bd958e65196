/**
 * The console's frame: who is signed in, the sections their permissions open (docs/admin-console.md
 * "What each role sees"), and the refusal for a user who holds no admin role.
 */
import type { ComponentType } from 'preact';
import { useEffect } from 'preact/hooks';
import { forbidden } from '../api/graphql.ts';
import { type Can, loadViewer, useCan, viewer } from '../auth/permissions.ts';
import { account, signOut } from '../auth/session.ts';
import { AuditSection } from '../sections/audit.tsx';
import { BackendsSection } from '../sections/backends.tsx';
import { ClientsSection } from '../sections/clients.tsx';
import { KeysSection } from '../sections/keys.tsx';
import { RolesSection } from '../sections/roles.tsx';
import { SamlSection } from '../sections/saml.tsx';
import { ScimTokensSection } from '../sections/scim-tokens.tsx';
import { WebhooksSection } from '../sections/webhooks.tsx';
import { UsersSection } from '../sections/users.tsx';
import { Loading } from './kit.tsx';
import { follow, href, navigate, route } from './router.ts';

interface Section {
  page: string;
  title: string;
  view: ComponentType;
  /** Whether the signed-in admin may read it (the permission of its list query): otherwise it is not in the navigation. */
  may: (can: Can) => boolean;
}

const SECTIONS: Section[] = [
  { page: 'clients', title: 'Clients', view: ClientsSection, may: (can) => can.any('apps:read', 'apps:write', 'apps:owned') },
  { page: 'saml', title: 'SAML applications', view: SamlSection, may: (can) => can.any('apps:read', 'apps:write', 'apps:owned') },
  { page: 'users', title: 'Users', view: UsersSection, may: (can) => can('users:read') },
  { page: 'audit', title: 'Audit events', view: AuditSection, may: (can) => can('audit:read') },
  { page: 'backends', title: 'Identity backends', view: BackendsSection, may: (can) => can('backends:read') },
  { page: 'keys', title: 'Signing keys', view: KeysSection, may: (can) => can('backends:read') },
  { page: 'scim-tokens', title: 'SCIM tokens', view: ScimTokensSection, may: (can) => can('backends:read') },
  { page: 'webhooks', title: 'Webhooks', view: WebhooksSection, may: (can) => can('webhooks:manage') },
  { page: 'roles', title: 'Admin roles', view: RolesSection, may: (can) => can('roles:manage') },
];

const SignOutButton = () => (
  <button type="button" class="secondary" onClick={signOut}>
    Sign out
  </button>
);

/** A signed-in user without an admin role: this, and nothing else. */
export function Refusal({ username }: { username: string }) {
  useEffect(() => void (document.title = 'Administrators only · Latchkey'), []);
  return (
    <main id="main" class="narrow">
      <h1>Administrators only</h1>
      <p>
        You are signed in as <strong>{username}</strong>, who has no admin role. The admin console is for administrators (admin, helpdesk,
        auditor, application owners); ask one to give you a role if you need it.
      </p>
      <SignOutButton />
    </main>
  );
}

export function App() {
  const me = account.use();
  const who = viewer.use();
  const can = useCan();
  const refused = forbidden.use();
  const { page } = route.use();
  // The token carries the admin scope: ask the API what its holder may do (again after a refusal).
  const admin = !!me?.admin;
  useEffect(() => {
    if (admin) void loadViewer();
  }, [admin, me?.userId, refused]);
  const open = SECTIONS.filter((s) => s.may(can));
  const section = open.find((s) => s.page === page);
  useEffect(() => {
    // An unknown page, or one the permissions do not open: the first section they do.
    if (who && !section && open[0]) navigate(href(open[0].page), true);
  }, [who, section, open[0]?.page]);
  useEffect(() => {
    if (!section) return;
    document.title = `${section.title} · Latchkey admin`;
    // A new section: its heading takes the focus, so a screen reader says where one is.
    document.getElementById('section-title')?.focus({ preventScroll: true });
  }, [section?.page]);

  if (!me) return null;
  // Without the admin scope the API would refuse everything: it is not asked at all.
  if (!me.admin || who === null || (who && open.length === 0)) return <Refusal username={me.username} />;
  if (!who)
    return (
      <main id="main" class="narrow">
        <Loading>Reading what you may do…</Loading>
      </main>
    );
  const View = section?.view;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <p class="brand">
          Latchkey <span>admin</span>
        </p>
        <nav aria-label="Sections">
          <ul>
            {open.map((s) => (
              <li key={s.page}>
                <a href={href(s.page)} onClick={follow} aria-current={s.page === page ? 'page' : undefined}>
                  {s.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span>
            Signed in as <strong>{me.username}</strong>
            {who.roles.length ? <span class="roles"> ({who.roles.join(', ')})</span> : null}
          </span>
          <SignOutButton />
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {section && View ? (
          <>
            <h1 id="section-title" tabIndex={-1}>
              {section.title}
            </h1>
            <View key={section.page} />
          </>
        ) : null}
      </main>
    </>
  );
}
