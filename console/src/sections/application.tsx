/**
 * An application's page (docs/access-and-claims.md): an OAuth client or a SAML service provider, with
 * its Access, Roles and Claims (or Attributes) tabs. At /admin/clients?app=<client id>&tab=… and
 * /admin/saml?app=<entity ID>&tab=…, so a reload or a shared link opens the same tab.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { ClientQuery, SamlServiceProviderQuery } from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { ErrorNote, Loading, useLoad } from '../ui/kit.tsx';
import type { Option } from '../ui/pickers.tsx';
import { follow, href, navigate } from '../ui/router.ts';
import { type Application, ofClient, ofSp, ownersOf } from './application-model.ts';
import { AccessTab, RolesTab } from './access-tab.tsx';
import { AttributesTab, ClaimsTab } from './mappings-tab.tsx';

interface Tab {
  key: string;
  title: string;
}

/** The tabs (ARIA tabs: arrows move between them, the panel follows the one selected). */
function Tabs({
  label,
  tabs,
  current,
  onSelect,
  children,
}: {
  label: string;
  tabs: Tab[];
  current: string;
  onSelect: (key: string) => void;
  children: ComponentChildren;
}) {
  const list = useRef<HTMLDivElement>(null);
  const move = (to: number) => {
    const tab = tabs[(to + tabs.length) % tabs.length]!;
    onSelect(tab.key);
    setTimeout(() => list.current?.querySelector<HTMLElement>(`#tab-${tab.key}`)?.focus());
  };
  const at = tabs.findIndex((t) => t.key === current);
  return (
    <>
      <div
        role="tablist"
        aria-label={label}
        ref={list}
        class="tabs"
        onKeyDown={(e) => {
          const keys: Record<string, number> = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 };
          if (!(e.key in keys)) return;
          e.preventDefault();
          move(keys[e.key]!);
        }}
      >
        {tabs.map((t) => (
          <button
            key={t.key}
            type="button"
            role="tab"
            id={`tab-${t.key}`}
            aria-selected={t.key === current}
            aria-controls={`panel-${t.key}`}
            tabIndex={t.key === current ? 0 : -1}
            onClick={() => onSelect(t.key)}
          >
            {t.title}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${current}`} aria-labelledby={`tab-${current}`} class="tab-panel">
        {children}
      </div>
    </>
  );
}

/** The page of one application; `page` is the console section it belongs to (`clients` or `saml`). */
export function ApplicationPage({ kind, id, tab }: { kind: 'client' | 'saml'; id: string; tab: string | null }) {
  const page = kind === 'client' ? 'clients' : 'saml';
  const loaded = useLoad(
    async () =>
      kind === 'client'
        ? ((r) => (r.client ? ofClient(r.client) : null))(await request(ClientQuery, { clientId: id }))
        : ((r) => (r.samlServiceProvider ? ofSp(r.samlServiceProvider) : null))(await request(SamlServiceProviderQuery, { entityId: id })),
    [kind, id],
  );
  const [saved, setSaved] = useState<Application>();
  const [version, setVersion] = useState(0);
  const [previewUser, setPreviewUser] = useState<Option>();
  const can = useCan();
  const app = saved ?? loaded.data ?? undefined;
  const tabs: Tab[] = [
    { key: 'access', title: 'Access' },
    { key: 'roles', title: 'Roles' },
    kind === 'client' ? { key: 'claims', title: 'Claims' } : { key: 'attributes', title: 'Attributes' },
  ];
  const current = tabs.some((t) => t.key === tab) ? tab! : 'access';
  const allLabel = kind === 'client' ? 'All clients' : 'All SAML applications';

  useEffect(() => {
    if (app) document.getElementById('app-title')?.focus({ preventScroll: true });
  }, [app?.id]);

  const back = (
    <a class="back" href={href(page)} onClick={follow}>
      ← {allLabel}
    </a>
  );
  if (loaded.error) {
    return (
      <>
        {back}
        <ErrorNote error={loaded.error} />
      </>
    );
  }
  if (!app) {
    return (
      <>
        {back}
        {loaded.loading ? <Loading>Loading the application…</Loading> : <p class="empty">There is no application {id}.</p>}
      </>
    );
  }
  const onSaved = (next: Application) => {
    setSaved(next);
    setVersion((v) => v + 1);
  };
  // The preview reads the application and the user: an owner without users:read goes without it.
  const preview = can('apps:read') && can('users:read') ? { user: previewUser, onUser: setPreviewUser, version } : undefined;
  const readOnly = !can.changeApp(ownersOf(app));
  const props = { app, onSaved, preview, readOnly, ownerOnly: !readOnly && !can.manageApps };
  const launchUrl = app.kind === 'client' ? app.client.launchUrl : app.sp.launchUrl;
  return (
    <section aria-labelledby="app-title" class="application">
      {back}
      <div class="app-head">
        <h2 id="app-title" tabIndex={-1}>
          {app.name}
        </h2>
        <code>{app.id}</code>
      </div>
      <p class="hint launch">
        {launchUrl ? (
          <>
            In users’ My applications, starting at <code id="app-launch-url">{launchUrl}</code>
          </>
        ) : app.kind === 'client' ? (
          'Not in users’ My applications: it has no login initiation URL (settings, Advanced).'
        ) : (
          'Not in users’ My applications: it does not allow IdP-initiated sign-on (settings).'
        )}
      </p>
      <Tabs
        label={`${app.name} settings`}
        tabs={tabs}
        current={current}
        onSelect={(key) => navigate(href(page, { app: id, tab: key }), true)}
      >
        {current === 'access' ? <AccessTab key={`access-${app.id}`} {...props} /> : null}
        {current === 'roles' ? <RolesTab key={`roles-${app.id}`} {...props} /> : null}
        {current === 'claims' && app.kind === 'client' ? <ClaimsTab key={`claims-${app.id}`} {...props} app={app} /> : null}
        {current === 'attributes' && app.kind === 'saml' ? <AttributesTab key={`attributes-${app.id}`} {...props} app={app} /> : null}
      </Tabs>
    </section>
  );
}
