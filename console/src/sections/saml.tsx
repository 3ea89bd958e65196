/**
 * SAML applications (docs/saml-applications.md): the IdP's values to enter at an SP, the registered SPs,
 * register, edit, delete. Registering and deleting take apps:write; an owner (apps:owned) sees and edits
 * only the SPs whose owners name them (docs/admin-console.md "What each role sees").
 */
import { useEffect, useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { DeleteSamlServiceProviderMutation, SamlServiceProvidersQuery, type SamlSpFieldsFragment } from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { ConfirmDialog, useConfirm } from '../ui/confirm.tsx';
import { CopyButton, ErrorNote, Loading, Notice, useLoad } from '../ui/kit.tsx';
import { Table, type Column } from '../ui/table.tsx';
import { follow, href, route } from '../ui/router.ts';
import { ApplicationPage } from './application.tsx';
import { SamlForm, samlLabels } from './saml-form.tsx';

const formatNames: Record<string, string> = {
  PERSISTENT: 'persistent',
  EMAIL: 'email',
  EMAIL_ADDRESS: 'email',
  UNSPECIFIED: 'username',
  TRANSIENT: 'transient',
};

const columns: Array<Column<SamlSpFieldsFragment>> = [
  { header: 'Name', rowHeader: true, cell: (s) => s.name },
  { header: 'Entity ID', cell: (s) => <code>{s.entityId}</code> },
  { header: 'NameID', cell: (s) => formatNames[s.nameIdFormat] ?? s.nameIdFormat },
  { header: 'ACS URLs', class: 'uris', cell: (s) => s.assertionConsumerServiceUrls.join(' ') },
  {
    header: 'Options',
    cell: (s) =>
      [
        s.encryptAssertions ? 'encrypted' : '',
        s.wantAuthnRequestsSigned ? 'signed requests' : '',
        s.allowIdpInitiated ? 'IdP-initiated' : '',
      ]
        .filter(Boolean)
        .join(', ') || '—',
  },
];

/** The list, or one SP's page (`?app=<entity ID>`: its access, roles and attributes, docs/access-and-claims.md). */
export function SamlSection() {
  const { query } = route.use();
  const app = query.get('app');
  return app ? <ApplicationPage key={app} kind="saml" id={app} tab={query.get('tab')} /> : <SamlList />;
}

function SamlList() {
  const list = useLoad(() => request(SamlServiceProvidersQuery, {}), []);
  const [form, setForm] = useState<{ sp?: SamlSpFieldsFragment }>();
  const [notice, setNotice] = useState<string>();
  const remove = useConfirm<SamlSpFieldsFragment>();
  const can = useCan();
  const idp = list.data?.samlIdentityProvider;

  useEffect(() => {
    if (form) document.getElementById('saml-form-title')?.focus();
  }, [form]);

  async function confirmed() {
    const deleting = remove.asked;
    if (!deleting) return;
    const done = await remove.run(async () => {
      await request(DeleteSamlServiceProviderMutation, { entityId: deleting.entityId });
      return true;
    });
    if (done) {
      setNotice(`${deleting.name} is deleted.`);
      remove.close();
      list.reload();
    }
  }

  return (
    <>
      <div class="toolbar">
        <p class="lede">Applications that sign in by SAML 2.0, through the same login page and SSO session.</p>
        {can.manageApps ? (
          <button type="button" onClick={() => setForm({})} aria-expanded={!!form && !form.sp}>
            Register a SAML application
          </button>
        ) : null}
      </div>
      {idp ? (
        <section class="panel" aria-labelledby="saml-idp-title">
          <h2 id="saml-idp-title">What to enter in the application</h2>
          <dl class="pairs">
            <dt>Metadata URL</dt>
            <dd>
              <code>{idp.metadataUrl}</code> <CopyButton text={idp.metadataUrl} label="Copy the metadata URL" />
            </dd>
            <dt>Entity ID (issuer)</dt>
            <dd>
              <code>{idp.entityId}</code> <CopyButton text={idp.entityId} label="Copy the entity ID" />
            </dd>
            <dt>SSO URL</dt>
            <dd>
              <code>{idp.singleSignOnUrl}</code> <CopyButton text={idp.singleSignOnUrl} label="Copy the SSO URL" />
            </dd>
            <dt>SLO URL</dt>
            <dd>
              <code>{idp.singleLogoutUrl}</code> <CopyButton text={idp.singleLogoutUrl} label="Copy the SLO URL" />
            </dd>
            <dt>Signing certificate</dt>
            <dd>
              <CopyButton text={idp.signingCertificate} label="Copy the signing certificate (PEM)" />
            </dd>
          </dl>
        </section>
      ) : null}
      <Notice text={notice} />
      {form ? (
        <SamlForm
          key={form.sp?.entityId ?? 'new'}
          sp={form.sp}
          ownerOnly={!can.manageApps}
          onCancel={() => setForm(undefined)}
          onDone={(sp) => {
            setForm(undefined);
            setNotice(form.sp ? `${sp.name} is saved.` : `${sp.name} is registered.`);
            list.reload();
          }}
        />
      ) : null}
      <section aria-labelledby="saml-list-title" aria-busy={list.loading}>
        <h2 id="saml-list-title" class="visually-hidden">
          Registered SAML applications
        </h2>
        <ErrorNote error={list.error} />
        {list.loading && !list.data ? <Loading>Loading SAML applications…</Loading> : null}
        <Table
          label="Registered SAML applications"
          columns={columns}
          rows={list.data?.samlServiceProviders}
          rowKey={(s) => s.entityId}
          empty="No SAML applications yet."
          actions={(s) => (
            <>
              {can.changeApp(s.owners) ? (
                <button type="button" class="secondary" aria-label={`Edit ${s.name}`} onClick={() => setForm({ sp: s })}>
                  Edit
                </button>
              ) : null}
              <a href={href('saml', { app: s.entityId })} onClick={follow} aria-label={`Access and attributes of ${s.name}`}>
                Access & attributes
              </a>
              {can.manageApps ? (
                <button type="button" class="danger" aria-label={`Delete ${s.name}`} onClick={() => remove.ask(s)}>
                  Delete
                </button>
              ) : null}
            </>
          )}
        />
      </section>
      {remove.asked ? (
        <ConfirmDialog
          title={`Delete ${remove.asked.name}?`}
          confirm={remove}
          label="Delete application"
          busyLabel="Working…"
          labels={samlLabels}
          onConfirm={confirmed}
        >
          <p>The application can no longer sign in through Latchkey. This cannot be undone.</p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
