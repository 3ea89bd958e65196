/**
 * What an application is told (docs/access-and-claims.md "Claim mappings", "SAML attributes"): a
 * client's Claims tab (claim mappings) and an SP's Attributes tab (NameID, roles attribute, attribute
 * mappings), each with its preview.
 */
import { useState } from 'preact/hooks';
import type { ApiError } from '../api/graphql.ts';
import type { AttributeNameFormat, ClaimTarget, MappingSource, SamlNameIdFormat } from '../api/generated.ts';
import { Checkbox, ErrorNote, Field, Notice } from '../ui/kit.tsx';
import { SaveButton, type TabProps, useSave } from './access-tab.tsx';
import { type Application, fieldLabels, type PreviewState } from './application-model.ts';
import { Preview } from './preview.tsx';

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

let nextKey = 0;
const severalByDefault = (source: MappingSource) => source === 'GROUPS' || source === 'ROLES';
const orNull = (v: string) => (v === '' ? null : v);

const sourceRow = (m: {
  source: MappingSource;
  attribute?: string | null;
  value?: string | null;
  groupFilter?: string | null;
  multiValued: boolean;
}): SourceRow => ({
  key: nextKey++,
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

/** The AWS example (docs/access-and-claims.md "AWS with SAML"): roles from groups aws-<account>-<role>, the session named by the username. */
const awsExample = (): AttributeRow[] => [
  {
    key: nextKey++,
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
    key: nextKey++,
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
  const invalid = err?.field === `${at}.source`;
  return (
    <>
      <div class="field">
        <label for={`${id}-source`}>Source</label>
        <select
          id={`${id}-source`}
          value={row.source}
          aria-invalid={invalid ? 'true' : undefined}
          onChange={(e) => {
            const source = e.currentTarget.value as MappingSource;
            onChange({ source, multiValued: severalByDefault(source) });
          }}
        >
          {SOURCES.map(([s, label]) => (
            <option key={s} value={s}>
              {label}
            </option>
          ))}
        </select>
      </div>
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

function useRows<R extends { key: number }>(initial: () => R[]) {
  const [rows, setRows] = useState<R[]>(initial);
  return {
    rows,
    setRows,
    change: (key: number, patch: Partial<R>) => setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r))),
    remove: (key: number) => setRows((rs) => rs.filter((r) => r.key !== key)),
    add: (...more: R[]) => setRows((rs) => [...rs, ...more]),
  };
}

type PreviewProps = { preview: PreviewState };

function TabPreview({ app, preview, id }: { app: Application; id: string } & PreviewProps) {
  return (
    <Preview
      id={id}
      kind={app.kind}
      applicationId={app.id}
      applicationName={app.name}
      user={preview.user}
      onUser={preview.onUser}
      version={preview.version}
      toldOpen
    />
  );
}

export function ClaimsTab(p: TabProps & PreviewProps & { app: Extract<Application, { kind: 'client' }> }) {
  const { rows, change, remove, add } = useRows<ClaimRow>(() =>
    p.app.client.claimMappings.map((m) => ({ ...sourceRow(m), claim: m.claim, scope: m.scope ?? '', targets: m.targets })),
  );
  const s = useSave(p, 'panel-claims');
  const err = s.error;

  return (
    <>
      <form
        id="claims-form"
        class="panel"
        aria-labelledby="claims-title"
        aria-busy={s.busy}
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          const claimMappings = rows.map((r) => ({
            claim: r.claim.trim(),
            ...sourceInput(r),
            scope: orNull(r.scope.trim()),
            targets: r.targets,
          }));
          void s.save({ claimMappings }, `The claims of ${p.app.name} are saved.`);
        }}
      >
        <h3 id="claims-title">Claims {p.app.name} receives</h3>
        <p class="hint">
          Beyond the standard claims its scopes allow. A name OpenID Connect reserves (sub, iss, aud, exp, nonce, …) cannot be mapped.
        </p>
        {rows.length === 0 ? <p class="empty">No claim mappings: it receives the standard claims alone.</p> : null}
        <div class="rows">
          {rows.map((r, i) => {
            const at = `claimMappings.${i}`;
            const id = `claim-${i}`;
            return (
              <fieldset key={r.key} class="row">
                <legend>
                  Claim {i + 1}
                  {r.claim ? `: ${r.claim}` : ''}
                </legend>
                <div class="grid">
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
                </div>
                <button type="button" class="secondary" onClick={() => remove(r.key)}>
                  Remove claim {i + 1}
                </button>
              </fieldset>
            );
          })}
        </div>
        <div class="actions">
          <button
            type="button"
            class="secondary"
            onClick={() =>
              add({
                key: nextKey++,
                claim: '',
                source: 'ATTRIBUTE',
                attribute: '',
                value: '',
                groupFilter: '',
                multiValued: false,
                scope: '',
                targets: ['ID_TOKEN', 'USERINFO'],
              })
            }
          >
            Add a claim
          </button>
        </div>
        <ErrorNote error={err} labels={fieldLabels(err?.field)} />
        <Notice text={s.notice} />
        <SaveButton busy={s.busy} label="Save claims" />
      </form>
      <TabPreview app={p.app} preview={p.preview} id="claims-preview" />
    </>
  );
}

export function AttributesTab(p: TabProps & PreviewProps & { app: Extract<Application, { kind: 'saml' }> }) {
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
      <form
        id="attributes-form"
        class="panel"
        aria-labelledby="attributes-title"
        aria-busy={s.busy}
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          const attributeMappings = mapped
            ? rows.map((r) => ({
                name: r.name.trim(),
                nameFormat: r.nameFormat,
                friendlyName: orNull(r.friendlyName.trim()),
                ...sourceInput(r),
              }))
            : null;
          void s.save(
            {
              nameIdFormat: format,
              nameIdAttribute: format === 'UNSPECIFIED' ? orNull(nameIdAttribute.trim()) : null,
              rolesAttribute: orNull(rolesAttribute.trim()),
              attributeMappings,
            },
            `The attributes of ${p.app.name} are saved.`,
          );
        }}
      >
        <h3 id="attributes-title">What {p.app.name} is told</h3>
        <div class="grid">
          <div class="field">
            <label for="attr-name-id-format">NameID format</label>
            <select id="attr-name-id-format" value={format} onChange={(e) => setFormat(e.currentTarget.value as SamlNameIdFormat)}>
              {NAME_ID_FORMATS.map(([f, label]) => (
                <option key={f} value={f}>
                  {label}
                </option>
              ))}
            </select>
          </div>
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
        </div>
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
          <>
            {rows.length === 0 ? <p class="empty">No attributes mapped: the assertions carry the NameID alone.</p> : null}
            <div class="rows">
              {rows.map((r, i) => {
                const at = `attributeMappings.${i}`;
                const id = `attr-${i}`;
                return (
                  <fieldset key={r.key} class="row">
                    <legend>
                      Attribute {i + 1}
                      {r.name ? `: ${r.name}` : ''}
                    </legend>
                    <div class="grid">
                      <Field
                        id={`${id}-name`}
                        name={`${at}.name`}
                        label="Name"
                        value={r.name}
                        onInput={(name) => change(r.key, { name })}
                        error={err}
                      />
                      <div class="field">
                        <label for={`${id}-name-format`}>Name format</label>
                        <select
                          id={`${id}-name-format`}
                          value={r.nameFormat}
                          onChange={(e) => change(r.key, { nameFormat: e.currentTarget.value as AttributeNameFormat })}
                        >
                          {NAME_FORMATS.map(([f, label]) => (
                            <option key={f} value={f}>
                              {label}
                            </option>
                          ))}
                        </select>
                      </div>
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
                    </div>
                    <button type="button" class="secondary" onClick={() => remove(r.key)}>
                      Remove attribute {i + 1}
                    </button>
                  </fieldset>
                );
              })}
            </div>
            <div class="actions">
              <button
                type="button"
                class="secondary"
                onClick={() =>
                  add({
                    key: nextKey++,
                    name: '',
                    nameFormat: 'URI',
                    friendlyName: '',
                    source: 'ATTRIBUTE',
                    attribute: '',
                    value: '',
                    groupFilter: '',
                    multiValued: false,
                  })
                }
              >
                Add an attribute
              </button>
              <button type="button" class="secondary" onClick={() => add(...awsExample())}>
                Add the AWS example
              </button>
            </div>
          </>
        ) : null}
        <ErrorNote error={err} labels={fieldLabels(err?.field)} />
        <Notice text={s.notice} />
        <SaveButton busy={s.busy} label="Save attributes" />
      </form>
      <TabPreview app={p.app} preview={p.preview} id="attributes-preview" />
    </>
  );
}
