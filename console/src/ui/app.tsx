/** The console's frame: who is signed in, the sections, and the refusal for a user who is not an admin. */
import type { ComponentType } from 'preact';
import { useEffect } from 'preact/hooks';
import { forbidden } from '../api/graphql.ts';
import { account, signOut } from '../auth/session.ts';
import { AuditSection } from '../sections/audit.tsx';
import { BackendsSection } from '../sections/backends.tsx';
import { ClientsSection } from '../sections/clients.tsx';
import { KeysSection } from '../sections/keys.tsx';
import { SamlSection } from '../sections/saml.tsx';
import { ScimTokensSection } from '../sections/scim-tokens.tsx';
import { UsersSection } from '../sections/users.tsx';
import { follow, href, navigate, route } from './router.ts';

const SECTIONS: Array<{ page: string; title: string; view: ComponentType }> = [
  { page: 'clients', title: 'Clients', view: ClientsSection },
  { page: 'saml', title: 'SAML applications', view: SamlSection },
  { page: 'users', title: 'Users', view: UsersSection },
  { page: 'audit', title: 'Audit events', view: AuditSection },
  { page: 'backends', title: 'Identity backends', view: BackendsSection },
  { page: 'keys', title: 'Signing keys', view: KeysSection },
  { page: 'scim-tokens', title: 'SCIM tokens', view: ScimTokensSection },
];

const SignOutButton = () => (
  <button type="button" class="secondary" onClick={signOut}>
    Sign out
  </button>
);

/** A signed-in user without the admin role: this, and nothing else. */
export function Refusal({ username }: { username: string }) {
  useEffect(() => void (document.title = 'Administrators only · Latchkey'), []);
  return (
    <main id="main" class="narrow">
      <h1>Administrators only</h1>
      <p>
        You are signed in as <strong>{username}</strong>, who does not have the admin role. The admin console is for administrators; ask one
        to give you the role if you need it.
      </p>
      <SignOutButton />
    </main>
  );
}

export function App() {
  const me = account.use();
  const denied = forbidden.use();
  const { page } = route.use();
  const section = SECTIONS.find((s) => s.page === page);
  useEffect(() => {
    if (!section) navigate(href('clients'), true);
  }, [section]);
  useEffect(() => {
    if (!section) return;
    document.title = `${section.title} · Latchkey admin`;
    // A new section: its heading takes the focus, so a screen reader says where one is.
    document.getElementById('section-title')?.focus({ preventScroll: true });
  }, [section?.page]);

  if (!me) return null;
  if (!me.admin || denied) return <Refusal username={me.username} />;
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
            {SECTIONS.map((s) => (
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
