/**
 * What an application is told (docs/access-and-claims.md "Claim mappings", "SAML attributes"): a
 * client's Claims tab (claim mappings) and an SP's Attributes tab (NameID, roles attribute, attribute
 * mappings), each with its preview.
 */
import { useState } from 'preact/hooks';
import type { ApiError } from '../api/graphql.ts';
import type { AttributeNameFormat, ClaimTarget, MappingSource, SamlNameIdFormat } from '../api/generated.ts';
import { Checkbox, Field, SelectField } from '../ui/kit.tsx';
import { newKey, RowList, type TabProps, TabForm, TabPreview, useRows, useSave } from './access-tab.tsx';
import type { Application } from './application-model.ts';

const SOURCES: Array<[MappingSource, string]> = [
  ['ATTRIBUTE', 'A user attribute'],
  ['GROUPS', 'The user’s groups'],
  ['ROLES', 'The user’s roles of this application'],
  ['STATIC', 'A fixed value'],
  ['USERID', 'The user’s id (sub)'],
  ['USERNAME', 'The username'],
  ['EMAIL', 'The email address (a verified one only)'],
];

const TARGETS: Array<[ClaimTarget, string]> = [
  ['ID_TOKEN', 'id_token'],
  ['USERINFO', 'userinfo'],
  ['ACCESS_TOKEN', 'JWT access token'],
  ['INTROSPECTION', 'Introspection'],
];

const NAME_FORMATS: Array<[AttributeNameFormat, string]> = [
  ['URI', 'URI'],
  ['BASIC', 'Basic'],
  ['UNSPECIFIED', 'Unspecified'],
];

const NAME_ID_FORMATS: Array<[SamlNameIdFormat, string]> = [
  ['PERSISTENT', 'Persistent (a pairwise opaque id)'],
  ['EMAIL_ADDRESS', 'Email address'],
  ['UNSPECIFIED', 'Unspecified (the username, or the attribute below)'],
  ['TRANSIENT', 'Transient (a new value in every assertion)'],
];

interface SourceRow {
  key: number;
  source: MappingSource;
  attribute: string;
  value: string;
  groupFilter: string;
  multiValued: boolean;
}
interface ClaimRow extends SourceRow {
  claim: string;
  scope: string;
  targets: ClaimTarget[];
}
interface AttributeRow extends SourceRow {
  name: string;
  nameFormat: AttributeNameFormat;
  friendlyName: string;
}

const severalByDefault = (source: MappingSource) => source === 'GROUPS' || source === 'ROLES';
const orNull = (v: string) => (v === '' ? null : v);

const sourceRow = (m: {
  source: MappingSource;
  attribute?: string | null;
  value?: string | null;
  groupFilter?: string | null;
  multiValued: boolean;
}): SourceRow => ({
  key: newKey(),
  source: m.source,
  attribute: m.attribute ?? '',
  value: m.value ?? '',
  groupFilter: m.groupFilter ?? '',
  multiValued: m.multiValued,
});

/** A row as the API takes it: only the fields its source reads. */
const sourceInput = (r: SourceRow) => ({
  source: r.source,
  attribute: r.source === 'ATTRIBUTE' ? orNull(r.attribute.trim()) : null,
  value: r.source === 'STATIC' || r.source === 'GROUPS' ? orNull(r.value) : null,
  groupFilter: r.source === 'GROUPS' ? orNull(r.groupFilter) : null,
  multiValued: r.multiValued,
});

/** A new row's source: a user attribute, yet unnamed. */
const newSource = (): Omit<SourceRow, 'key'> => ({ source: 'ATTRIBUTE', attribute: '', value: '', groupFilter: '', multiValued: false });

/** The AWS example (docs/access-and-claims.md "AWS with SAML"): roles from groups aws-<account>-<role>, the session named by the username. */
const awsExample = (): AttributeRow[] => [
  {
    key: newKey(),
    name: 'https://aws.amazon.com/SAML/Attributes/Role',
    nameFormat: 'URI',
    friendlyName: '',
    source: 'GROUPS',
    attribute: '',
    groupFilter: '^aws-(\\d{12})-(\\w+)$',
    value: 'arn:aws:iam::$1:role/$2,arn:aws:iam::$1:saml-provider/Latchkey',
    multiValued: true,
  },
  {
    key: newKey(),
    name: 'https://aws.amazon.com/SAML/Attributes/RoleSessionName',
    nameFormat: 'URI',
    friendlyName: '',
    source: 'USERNAME',
    attribute: '',
    groupFilter: '',
    value: '',
    multiValued: false,
  },
];

/** Where one row's value comes from: the source, and the fields that source reads. */
function SourceFields<R extends SourceRow>({
  row,
  at,
  id,
  err,
  onChange,
}: {
  row: R;
  /** The API's name of the row (`claimMappings.0`). */
  at: string;
  id: string;
  err: ApiError | undefined;
  onChange: (patch: Partial<SourceRow>) => void;
}) {
  return (
    <>
      <SelectField
        id={`${id}-source`}
        label="Source"
        value={row.source}
        options={SOURCES}
        invalid={err?.field === `${at}.source`}
        onChange={(source) => onChange({ source, multiValued: severalByDefault(source) })}
      />
      {row.source === 'ATTRIBUTE' ? (
        <Field
          id={`${id}-attribute`}
          name={`${at}.attribute`}
          label="Attribute"
          value={row.attribute}
          onInput={(attribute) => onChange({ attribute })}
          error={err}
          hint="A directory’s extraAttributes, an upstream’s extraClaims, or a database user’s attributes, by name."
        />
      ) : null}
      {row.source === 'GROUPS' ? (
        <Field
          id={`${id}-group-filter`}
          name={`${at}.groupFilter`}
          label="Group filter"
          value={row.groupFilter}
          onInput={(groupFilter) => onChange({ groupFilter })}
          error={err}
          hint="A regular expression; groups that do not match are left out. Empty: every group."
        />
      ) : null}
      {row.source === 'GROUPS' || row.source === 'STATIC' ? (
        <Field
          id={`${id}-value`}
          name={`${at}.value`}
          label={row.source === 'GROUPS' ? 'Value template' : 'Value'}
          value={row.value}
          onInput={(value) => onChange({ value })}
          error={err}
          hint={
            row.source === 'GROUPS'
              ? 'What each matching group becomes: $1, $2… stand for the filter’s capture groups. Empty: $1, or the whole name when the filter has none.'
              : undefined
          }
        />
      ) : null}
      <fieldset class="field">
        <legend>Values</legend>
        <Checkbox
          id={`${id}-multi`}
          label="Several values (a list, even of one)"
          checked={row.multiValued}
          onChange={(multiValued) => onChange({ multiValued })}
          hint="Off: the first value alone."
        />
      </fieldset>
    </>
  );
}

export function ClaimsTab(p: TabProps & { app: Extract<Application, { kind: 'client' }> }) {
  const { rows, change, remove, add } = useRows<ClaimRow>(() =>
    p.app.client.claimMappings.map((m) => ({ ...sourceRow(m), claim: m.claim, scope: m.scope ?? '', targets: m.targets })),
  );
  const s = useSave(p, 'panel-claims');
  const err = s.error;

  return (
    <>
      <TabForm
        name="claims"
        title={`Claims ${p.app.name} receives`}
        save={s}
        readOnly={p.readOnly}
        saveLabel="Save claims"
        onSubmit={() => {
          const claimMappings = rows.map((r) => ({
            claim: r.claim.trim(),
            ...sourceInput(r),
            scope: orNull(r.scope.trim()),
            targets: r.targets,
          }));
          void s.save({ claimMappings }, `The claims of ${p.app.name} are saved.`);
        }}
      >
        <p class="hint">
          Beyond the standard claims its scopes allow. A name OpenID Connect reserves (sub, iss, aud, exp, nonce, …) cannot be mapped.
        </p>
        <RowList
          rows={rows}
          noun="Claim"
          nameOf={(r) => r.claim}
          empty="No claim mappings: it receives the standard claims alone."
          onRemove={remove}
          adds={[['Add a claim', () => add({ key: newKey(), claim: '', ...newSource(), scope: '', targets: ['ID_TOKEN', 'USERINFO'] })]]}
          fields={(r, i) => {
            const at = `claimMappings.${i}`;
            const id = `claim-${i}`;
            return (
              <>
                <Field
                  id={`${id}-name`}
                  name={`${at}.claim`}
                  label="Claim name"
                  value={r.claim}
                  onInput={(claim) => change(r.key, { claim })}
                  error={err}
                />
                <SourceFields row={r} at={at} id={id} err={err} onChange={(patch) => change(r.key, patch)} />
                <Field
                  id={`${id}-scope`}
                  name={`${at}.scope`}
                  label="Only with scope"
                  value={r.scope}
                  onInput={(scope) => change(r.key, { scope })}
                  error={err}
                  hint="Sent only when the grant holds this scope. Empty: always."
                />
                <fieldset class={`field${err?.field === `${at}.targets` ? ' invalid' : ''}`}>
                  <legend>Sent in</legend>
                  {TARGETS.map(([t, label]) => (
                    <Checkbox
                      key={t}
                      id={`${id}-target-${t.toLowerCase()}`}
                      label={label}
                      checked={r.targets.includes(t)}
                      onChange={(on) => change(r.key, { targets: on ? [...r.targets, t] : r.targets.filter((x) => x !== t) })}
                    />
                  ))}
                </fieldset>
              </>
            );
          }}
        />
      </TabForm>
      <TabPreview app={p.app} preview={p.preview} id="claims-preview" toldOpen />
    </>
  );
}

export function AttributesTab(p: TabProps & { app: Extract<Application, { kind: 'saml' }> }) {
  const sp = p.app.sp;
  const [format, setFormat] = useState<SamlNameIdFormat>(sp.nameIdFormat === 'EMAIL' ? 'EMAIL_ADDRESS' : sp.nameIdFormat);
  const [nameIdAttribute, setNameIdAttribute] = useState(sp.nameIdAttribute ?? '');
  const [rolesAttribute, setRolesAttribute] = useState(sp.rolesAttribute);
  const [mapped, setMapped] = useState(sp.attributeMappings != null);
  const { rows, change, remove, add } = useRows<AttributeRow>(() =>
    (sp.attributeMappings ?? []).map((m) => ({
      ...sourceRow(m),
      name: m.name,
      nameFormat: m.nameFormat,
      friendlyName: m.friendlyName ?? '',
    })),
  );
  const s = useSave(p, 'panel-attributes');
  const err = s.error;

  return (
    <>
      <TabForm
        name="attributes"
        title={`What ${p.app.name} is told`}
        save={s}
        readOnly={p.readOnly}
        saveLabel="Save attributes"
        onSubmit={() => {
          const attributeMappings = mapped
            ? rows.map((r) => ({
                name: r.name.trim(),
                nameFormat: r.nameFormat,
                friendlyName: orNull(r.friendlyName.trim()),
                ...sourceInput(r),
              }))
            : null;
          // An owner gives the attributes alone: the NameID and the roles attribute are apps:write's.
          const nameId = p.ownerOnly
            ? {}
            : {
                nameIdFormat: format,
                nameIdAttribute: format === 'UNSPECIFIED' ? orNull(nameIdAttribute.trim()) : null,
                rolesAttribute: orNull(rolesAttribute.trim()),
              };
          void s.save({ ...nameId, attributeMappings }, `The attributes of ${p.app.name} are saved.`);
        }}
      >
        {p.ownerOnly ? <p class="hint">The NameID and the roles attribute’s name are for an admin with apps:write to change.</p> : null}
        <fieldset class="grid" disabled={p.ownerOnly}>
          <legend class="visually-hidden">NameID and roles attribute</legend>
          <SelectField id="attr-name-id-format" label="NameID format" value={format} options={NAME_ID_FORMATS} onChange={setFormat} />
          {format === 'UNSPECIFIED' ? (
            <Field
              id="attr-name-id-attribute"
              name="nameIdAttribute"
              label="NameID attribute"
              value={nameIdAttribute}
              onInput={setNameIdAttribute}
              error={err}
              hint="The user attribute the NameID carries. Empty: the username."
            />
          ) : null}
          <Field
            id="attr-roles-attribute"
            name="rolesAttribute"
            label="Roles attribute name"
            value={rolesAttribute}
            onInput={setRolesAttribute}
            error={err}
            hint="The attribute carrying the user’s roles of this application (the Roles tab), when it has roles. Empty: roles."
          />
        </fieldset>
        <fieldset class="field attribute-set">
          <legend>Attributes</legend>
          <div class="check">
            <input type="radio" id="attr-fixed" name="attribute-set" checked={!mapped} onChange={() => setMapped(false)} />
            <label for="attr-fixed">The standard set ({sp.attributes.join(', ') || 'none'}, chosen in the application’s settings)</label>
          </div>
          <div class="check">
            <input type="radio" id="attr-mapped" name="attribute-set" checked={mapped} onChange={() => setMapped(true)} />
            <label for="attr-mapped">Only the attributes mapped below</label>
          </div>
        </fieldset>
        {mapped ? (
          <RowList
            rows={rows}
            noun="Attribute"
            nameOf={(r) => r.name}
            empty="No attributes mapped: the assertions carry the NameID alone."
            onRemove={remove}
            adds={[
              ['Add an attribute', () => add({ key: newKey(), name: '', nameFormat: 'URI', friendlyName: '', ...newSource() })],
              ['Add the AWS example', () => add(...awsExample())],
            ]}
            fields={(r, i) => {
              const at = `attributeMappings.${i}`;
              const id = `attr-${i}`;
              return (
                <>
                  <Field
                    id={`${id}-name`}
                    name={`${at}.name`}
                    label="Name"
                    value={r.name}
                    onInput={(name) => change(r.key, { name })}
                    error={err}
                  />
                  <SelectField
                    id={`${id}-name-format`}
                    label="Name format"
                    value={r.nameFormat}
                    options={NAME_FORMATS}
                    onChange={(nameFormat) => change(r.key, { nameFormat })}
                  />
                  <Field
                    id={`${id}-friendly-name`}
                    name={`${at}.friendlyName`}
                    label="Friendly name"
                    value={r.friendlyName}
                    onInput={(friendlyName) => change(r.key, { friendlyName })}
                    error={err}
                    hint="Optional."
                  />
                  <SourceFields row={r} at={at} id={id} err={err} onChange={(patch) => change(r.key, patch)} />
                </>
              );
            }}
          />
        ) : null}
      </TabForm>
      <TabPreview app={p.app} preview={p.preview} id="attributes-preview" toldOpen />
    </>
  );
}
