/**
 * Registering a SAML service provider (from its metadata, explicit fields over it), or changing one;
 * for one of its owners (apps:owned), the fields an owner may change.
 */
import { useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import {
  RegisterSamlServiceProviderMutation,
  UpdateSamlServiceProviderMutation,
  type SamlNameIdFormat,
  type SamlSpFieldsFragment,
} from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { Checkbox, ErrorNote, Field, FormActions, Options, useAction, words } from '../ui/kit.tsx';
import { UsersPicker } from '../ui/pickers.tsx';

export const samlLabels: Record<string, string> = {
  metadataXml: 'SP metadata',
  entityId: 'Entity ID',
  name: 'Name',
  assertionConsumerServiceUrls: 'ACS URLs',
  singleLogoutServiceUrl: 'SLO URL',
  singleLogoutSoapUrl: 'SOAP logout URL',
  signingCertificate: 'Signing certificate',
  encryptionCertificate: 'Encryption certificate',
  nameIdFormat: 'NameID format',
  attributes: 'Attributes',
  signAssertions: 'Signing',
  owners: 'Owners',
};

const ATTRIBUTES = ['uid', 'mail', 'displayName', 'groups'];
const FORMATS: Array<[SamlNameIdFormat, string]> = [
  ['PERSISTENT', 'Persistent (a pairwise opaque id)'],
  ['EMAIL_ADDRESS', 'Email address'],
  ['UNSPECIFIED', 'Unspecified (the username, or its NameID attribute)'],
  ['TRANSIENT', 'Transient (a new value in every assertion)'],
];

const text = (value: string): string | null => (value.trim() === '' ? null : value.trim());

interface FormProps {
  sp?: SamlSpFieldsFragment;
  onDone: (sp: SamlSpFieldsFragment) => void;
  onCancel: () => void;
}

/** The attributes released, as checkboxes. */
function AttributeChoice({ value, onChange }: { value: string[]; onChange: (next: (x: string[]) => string[]) => void }) {
  return (
    <fieldset class="field">
      <legend>Attributes released</legend>
      {ATTRIBUTES.map((a) => (
        <Checkbox
          key={a}
          id={`saml-attr-${a}`}
          label={a}
          checked={value.includes(a)}
          onChange={(on) => onChange((x) => (on ? [...x, a] : x.filter((y) => y !== a)))}
        />
      ))}
    </fieldset>
  );
}

/**
 * An owner's edit (the app-owner role): the endpoints and the attributes released, sent alone, since
 * the API lets an owner give nothing else here (access, roles and attribute mappings are on its page).
 */
function OwnerForm({ sp: s, onDone, onCancel }: FormProps & { sp: SamlSpFieldsFragment }) {
  const [acs, setAcs] = useState(s.assertionConsumerServiceUrls.join('\n'));
  const [slo, setSlo] = useState(s.singleLogoutServiceUrl ?? '');
  const [attributes, setAttributes] = useState<string[]>(s.attributes);
  const save = useAction();
  const err = save.error;

  async function submit(e: Event) {
    e.preventDefault();
    const input = { assertionConsumerServiceUrls: words(acs), singleLogoutServiceUrl: text(slo), attributes };
    const result = await save.run(
      async () => (await request(UpdateSamlServiceProviderMutation, { entityId: s.entityId, input })).updateSamlServiceProvider,
    );
    if (result) onDone(result);
    else setTimeout(() => (document.querySelector('#saml-form [aria-invalid="true"]') as HTMLElement | null)?.focus());
  }

  return (
    <form id="saml-form" class="panel" onSubmit={submit} aria-labelledby="saml-form-title" aria-busy={save.busy} noValidate>
      <h2 id="saml-form-title" tabIndex={-1}>
        Edit {s.name}
      </h2>
      <p class="hint">
        As one of its owners you change its endpoints and the attributes it is given here, and its access, roles and attribute mappings on
        its Access & attributes page.
      </p>
      <div class="grid">
        <Field
          id="saml-acs"
          name="assertionConsumerServiceUrls"
          label="ACS URLs"
          value={acs}
          onInput={setAcs}
          error={err}
          multiline
          hint="HTTP-POST Assertion Consumer Service URLs, one per line; the first is the default."
        />
        <Field id="saml-slo" name="singleLogoutServiceUrl" label="SLO URL" value={slo} onInput={setSlo} error={err} type="url" />
        <AttributeChoice value={attributes} onChange={setAttributes} />
      </div>
      <ErrorNote error={err} labels={samlLabels} />
      <FormActions busy={save.busy} editing label="Save changes" onCancel={onCancel} />
    </form>
  );
}

export function SamlForm(p: FormProps & { ownerOnly?: boolean }) {
  return p.ownerOnly && p.sp ? <OwnerForm {...p} sp={p.sp} /> : <FullForm {...p} />;
}

function FullForm(p: FormProps) {
  const s = p.sp;
  const can = useCan();
  const [owners, setOwners] = useState<string[]>(s?.owners ?? []);
  const [metadataXml, setMetadataXml] = useState('');
  const [entityId, setEntityId] = useState(s?.entityId ?? '');
  const [name, setName] = useState(s?.name ?? '');
  const [acs, setAcs] = useState((s?.assertionConsumerServiceUrls ?? []).join('\n'));
  const [slo, setSlo] = useState(s?.singleLogoutServiceUrl ?? '');
  const [sloSoap, setSloSoap] = useState(s?.singleLogoutSoapUrl ?? '');
  const [signingCert, setSigningCert] = useState(s?.signingCertificate ?? '');
  const [encryptionCert, setEncryptionCert] = useState(s?.encryptionCertificate ?? '');
  const [format, setFormat] = useState<SamlNameIdFormat | ''>(s?.nameIdFormat ?? '');
  const [attributes, setAttributes] = useState<string[]>(s?.attributes ?? ATTRIBUTES);
  const [signAssertions, setSignAssertions] = useState(s?.signAssertions ?? true);
  const [signResponses, setSignResponses] = useState(s?.signResponses ?? false);
  const [encryptAssertions, setEncryptAssertions] = useState(s?.encryptAssertions ?? false);
  const [wantSigned, setWantSigned] = useState(s?.wantAuthnRequestsSigned ?? false);
  const [allowIdpInitiated, setAllowIdpInitiated] = useState(s?.allowIdpInitiated ?? false);
  const save = useAction();
  const err = save.error;
  const id = (field: string) => `saml-${field}`;

  async function submit(e: Event) {
    e.preventDefault();
    // With metadata, an empty field is left to what the metadata says; the flags are sent as set.
    const fromMetadata = !s && metadataXml.trim() !== '';
    const optional = <T,>(value: T | null) => (fromMetadata && value === null ? undefined : value);
    const input = {
      entityId: optional(text(entityId)),
      name: optional(text(name)),
      assertionConsumerServiceUrls: optional(words(acs).length ? words(acs) : null),
      singleLogoutServiceUrl: optional(text(slo)),
      singleLogoutSoapUrl: optional(text(sloSoap)),
      signingCertificate: optional(text(signingCert)),
      encryptionCertificate: optional(text(encryptionCert)),
      nameIdFormat: format || undefined,
      attributes,
      signAssertions,
      signResponses,
      ...(fromMetadata ? {} : { encryptAssertions, wantAuthnRequestsSigned: wantSigned }),
      allowIdpInitiated,
      // Only when changed: naming owners is apps:write's, and an unchanged list is no change.
      ...(owners.join(' ') === (s?.owners ?? []).join(' ') ? {} : { owners }),
    };
    const result = await save.run(async () =>
      s
        ? (await request(UpdateSamlServiceProviderMutation, { entityId: s.entityId, input })).updateSamlServiceProvider
        : (await request(RegisterSamlServiceProviderMutation, { metadataXml: text(metadataXml), input })).registerSamlServiceProvider,
    );
    if (result) p.onDone(result);
    else setTimeout(() => (document.querySelector('#saml-form [aria-invalid="true"]') as HTMLElement | null)?.focus());
  }

  return (
    <form id="saml-form" class="panel" onSubmit={submit} aria-labelledby="saml-form-title" aria-busy={save.busy} noValidate>
      <h2 id="saml-form-title" tabIndex={-1}>
        {s ? `Edit ${s.name}` : 'Register a SAML application'}
      </h2>
      <div class="grid">
        {s ? null : (
          <Field
            id={id('metadata')}
            name="metadataXml"
            label="SP metadata (XML)"
            value={metadataXml}
            onInput={setMetadataXml}
            error={err}
            multiline
            hint="Paste the application's SAML metadata; the fields below then override it, and may stay empty."
          />
        )}
        <Field
          id={id('entity-id')}
          name="entityId"
          label="Entity ID"
          value={entityId}
          onInput={setEntityId}
          error={err}
          hint="The SP's entity ID (the Issuer of its requests)."
        />
        <Field
          id={id('name')}
          name="name"
          label="Name"
          value={name}
          onInput={setName}
          error={err}
          hint="Shown on the login page. Empty: the entity ID."
        />
        <Field
          id={id('acs')}
          name="assertionConsumerServiceUrls"
          label="ACS URLs"
          value={acs}
          onInput={setAcs}
          error={err}
          multiline
          hint="HTTP-POST Assertion Consumer Service URLs, one per line; the first is the default."
        />
        <Field
          id={id('slo')}
          name="singleLogoutServiceUrl"
          label="SLO URL"
          value={slo}
          onInput={setSlo}
          error={err}
          type="url"
          hint="Its HTTP-Redirect Single Logout URL: told in the browser when another SAML application signs out."
        />
        <Field
          id={id('slo-soap')}
          name="singleLogoutSoapUrl"
          label="SOAP logout URL"
          value={sloSoap}
          onInput={setSloSoap}
          error={err}
          type="url"
          hint="Its SOAP Single Logout URL: told server to server whenever a session ends (sign-out elsewhere, an admin, a leaver). Empty: not told."
        />
        <Field
          id={id('signing-cert')}
          name="signingCertificate"
          label="Signing certificate"
          value={signingCert}
          onInput={setSigningCert}
          error={err}
          multiline
          hint="PEM: checks the SP's signed requests."
        />
        <Field
          id={id('encryption-cert')}
          name="encryptionCertificate"
          label="Encryption certificate"
          value={encryptionCert}
          onInput={setEncryptionCert}
          error={err}
          multiline
          hint="PEM: assertions are encrypted to it when encryption is on."
        />
        <div class="field">
          <label for={id('format')}>NameID format</label>
          <select id={id('format')} value={format} onChange={(e) => setFormat(e.currentTarget.value as SamlNameIdFormat | '')}>
            {s ? null : <option value="">From the metadata, else persistent</option>}
            <Options options={FORMATS} />
          </select>
        </div>
        <AttributeChoice value={attributes} onChange={setAttributes} />
        <fieldset class="field">
          <legend>Options</legend>
          <Checkbox id={id('sign-assertions')} label="Sign assertions" checked={signAssertions} onChange={setSignAssertions} />
          <Checkbox id={id('sign-responses')} label="Sign responses" checked={signResponses} onChange={setSignResponses} />
          {!s && metadataXml.trim() ? null : (
            <>
              <Checkbox
                id={id('encrypt')}
                label="Encrypt assertions (needs the encryption certificate)"
                checked={encryptAssertions}
                onChange={setEncryptAssertions}
              />
              <Checkbox
                id={id('want-signed')}
                label="Require signed requests (needs the signing certificate)"
                checked={wantSigned}
                onChange={setWantSigned}
              />
            </>
          )}
          <Checkbox
            id={id('idp-initiated')}
            label="Allow IdP-initiated sign-on"
            checked={allowIdpInitiated}
            onChange={setAllowIdpInitiated}
          />
        </fieldset>
        {can('users:read') ? (
          <UsersPicker
            id="saml-owners"
            name="owners"
            label="Owners"
            hint="Users who, with the app-owner role, change its endpoints, attributes, access and roles (nothing else), and see it alone."
            value={owners}
            onChange={setOwners}
            error={err}
          />
        ) : null}
      </div>
      <ErrorNote error={err} labels={samlLabels} />
      <FormActions busy={save.busy} editing={Boolean(s)} label="Register application" onCancel={p.onCancel} />
    </form>
  );
}
