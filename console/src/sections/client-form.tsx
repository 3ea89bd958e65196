/**
 * Registering a client, or changing one: every field of RegisterClientInput / UpdateClientInput for a
 * holder of apps:write; for one of its owners (apps:owned), the fields an owner may change.
 */
import { useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import {
  RegisterClientMutation,
  UpdateClientMutation,
  type AccessTokenFormat,
  type ClientFieldsFragment,
  type ErrorCodes,
  type GrantType,
  type SigningAlgorithm,
  type TokenEndpointAuthMethod,
} from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { Checkbox, ErrorNote, Field, FormActions, useAction, words } from '../ui/kit.tsx';
import { UsersPicker } from '../ui/pickers.tsx';

export const clientLabels: Record<string, string> = {
  name: 'Name',
  clientId: 'Client',
  redirectUris: 'Redirect URIs',
  postLogoutRedirectUris: 'Post-logout redirect URIs',
  grantTypes: 'Grant types',
  scopes: 'Scopes',
  roles: 'Roles',
  accessTokenTtl: 'Access token lifetime',
  refreshTokenTtl: 'Refresh token lifetime',
  confidential: 'Client type',
  webOrigins: 'Web origins',
  allowPlainPkce: 'PKCE plain',
  errorCodes: 'Error codes',
  defaultAudience: 'Default audience',
  tokenEndpointAuthMethod: 'Token endpoint authentication',
  jwks: 'JWKS',
  jwksUri: 'JWKS URI',
  backchannelLogoutUri: 'Back-channel logout URI',
  initiateLoginUri: 'Login initiation URL',
  owners: 'Owners',
};

/** The fields under "Advanced": an error in one of them opens the section. */
const ADVANCED = new Set([
  'webOrigins',
  'allowPlainPkce',
  'errorCodes',
  'defaultAudience',
  'tokenEndpointAuthMethod',
  'jwks',
  'jwksUri',
  'backchannelLogoutUri',
  'initiateLoginUri',
]);

const AUTH_METHODS: Array<[TokenEndpointAuthMethod, string]> = [
  ['CLIENT_SECRET_BASIC', 'Secret in HTTP Basic (client_secret_basic)'],
  ['CLIENT_SECRET_POST', 'Secret as a form parameter (client_secret_post)'],
  ['CLIENT_SECRET_JWT', 'JWT signed with the secret (client_secret_jwt)'],
  ['PRIVATE_KEY_JWT', 'JWT signed with a registered key (private_key_jwt)'],
  ['NONE', 'None (a public client)'],
];

const GRANTS: Array<[GrantType, string]> = [
  ['AUTHORIZATION_CODE', 'Authorization code (browser sign-in)'],
  ['REFRESH_TOKEN', 'Refresh token'],
  ['PASSWORD', 'Password'],
  ['CLIENT_CREDENTIALS', 'Client credentials (service account)'],
  ['DEVICE_CODE', 'Device code (command-line tools, TVs)'],
];

const ttl = (text: string): number | null => (text.trim() === '' ? null : Number(text.trim()));
const text = (value: string): string | null => (value.trim() === '' ? null : value.trim());

interface FormProps {
  client?: ClientFieldsFragment;
  onDone: (result: { client: ClientFieldsFragment; secret?: string | null }) => void;
  onCancel: () => void;
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * An owner's edit (the app-owner role): the redirect URIs only, sent alone, since the API lets an
 * owner give nothing else here (its access, roles and claims are on the client's own page).
 */
function OwnerForm({ client: c, onDone, onCancel }: FormProps & { client: ClientFieldsFragment }) {
  const [redirectUris, setRedirectUris] = useState(c.redirectUris.join('\n'));
  const [logoutUris, setLogoutUris] = useState((c.postLogoutRedirectUris ?? []).join('\n'));
  const save = useAction();
  const err = save.error;

  async function submit(e: Event) {
    e.preventDefault();
    const input = { redirectUris: words(redirectUris), postLogoutRedirectUris: words(logoutUris) };
    const client = await save.run(async () => (await request(UpdateClientMutation, { clientId: c.clientId, input })).updateClient);
    if (client) onDone({ client });
    else setTimeout(() => (document.querySelector('#client-form [aria-invalid="true"]') as HTMLElement | null)?.focus());
  }

  return (
    <form id="client-form" class="panel" onSubmit={submit} aria-labelledby="client-form-title" aria-busy={save.busy} noValidate>
      <h2 id="client-form-title" tabIndex={-1}>
        Edit {c.name}
      </h2>
      <p class="hint">
        As one of its owners you change its redirect URIs here, and its access, roles and claims on its Access & claims page.
      </p>
      <div class="grid">
        <Field
          id="client-redirect-uris"
          name="redirectUris"
          label="Redirect URIs"
          value={redirectUris}
          onInput={setRedirectUris}
          error={err}
          multiline
          hint="One per line; https, or http for localhost only."
        />
        <Field
          id="client-logout-uris"
          name="postLogoutRedirectUris"
          label="Post-logout redirect URIs"
          value={logoutUris}
          onInput={setLogoutUris}
          error={err}
          multiline
          hint="Where sign-out may send the browser back to. One per line."
        />
      </div>
      <ErrorNote error={err} labels={clientLabels} />
      <FormActions busy={save.busy} editing label="Save changes" onCancel={onCancel} />
    </form>
  );
}

export function ClientForm(p: FormProps & { ownerOnly?: boolean }) {
  return p.ownerOnly && p.client ? <OwnerForm {...p} client={p.client} /> : <FullForm {...p} />;
}

function FullForm(p: FormProps) {
  const c = p.client;
  const can = useCan();
  const [owners, setOwners] = useState<string[]>(c?.owners ?? []);
  const [name, setName] = useState(c?.name ?? '');
  const [confidential, setConfidential] = useState(c?.confidential ?? true);
  const [redirectUris, setRedirectUris] = useState((c?.redirectUris ?? []).join('\n'));
  const [logoutUris, setLogoutUris] = useState((c?.postLogoutRedirectUris ?? []).join('\n'));
  const [grants, setGrants] = useState<GrantType[]>(c?.grantTypes ?? ['AUTHORIZATION_CODE', 'REFRESH_TOKEN']);
  const [scopes, setScopes] = useState((c?.scopes ?? ['openid', 'profile', 'email']).join(' '));
  const [roles, setRoles] = useState((c?.roles ?? []).join(' '));
  const [requireConsent, setRequireConsent] = useState(c?.requireConsent ?? false);
  const [ssoEnabled, setSsoEnabled] = useState(c?.ssoEnabled ?? true);
  const [oauthEnabled, setOauthEnabled] = useState(c?.oauthEnabled ?? true);
  const [accessTtl, setAccessTtl] = useState(c?.accessTokenTtl?.toString() ?? '');
  const [refreshTtl, setRefreshTtl] = useState(c?.refreshTokenTtl?.toString() ?? '');
  const [idTokenAlg, setIdTokenAlg] = useState<SigningAlgorithm>(c?.idTokenAlg ?? 'RS256');
  const [format, setFormat] = useState<AccessTokenFormat>(c?.accessTokenFormat ?? 'OPAQUE');
  // Advanced. The edit form sends one of these only when it was changed: the shown web origins may be
  // the redirect URIs' (not stored), and a new authentication method may need a new secret.
  const initial = {
    webOrigins: (c?.webOrigins ?? []).join('\n'),
    defaultAudience: c?.defaultAudience ?? '',
    authMethod: (c?.tokenEndpointAuthMethod ?? '') as TokenEndpointAuthMethod | '',
    jwks: c?.jwks ?? '',
    jwksUri: c?.jwksUri ?? '',
    backchannel: c?.backchannelLogoutUri ?? '',
    launch: c?.initiateLoginUri ?? '',
  };
  const [webOrigins, setWebOrigins] = useState(initial.webOrigins);
  const [allowPlainPkce, setAllowPlainPkce] = useState(c?.allowPlainPkce ?? false);
  const [errorCodes, setErrorCodes] = useState<ErrorCodes>(c?.errorCodes ?? 'MAXKEY');
  const [defaultAudience, setDefaultAudience] = useState(initial.defaultAudience);
  const [authMethod, setAuthMethod] = useState<TokenEndpointAuthMethod | ''>(initial.authMethod);
  const [jwks, setJwks] = useState(initial.jwks);
  const [jwksUri, setJwksUri] = useState(initial.jwksUri);
  const [backchannel, setBackchannel] = useState(initial.backchannel);
  const [launch, setLaunch] = useState(initial.launch);
  const [advancedOpen, setAdvancedOpen] = useState(false);
  const save = useAction();
  const id = (field: string) => `client-${field}`;
  const err = save.error;
  const advancedError = !!err?.field && ADVANCED.has(err.field);

  async function submit(e: Event) {
    e.preventDefault();
    const fields = {
      name,
      redirectUris: words(redirectUris),
      postLogoutRedirectUris: words(logoutUris),
      grantTypes: grants,
      scopes: words(scopes),
      roles: words(roles),
      requireConsent,
      ssoEnabled,
      oauthEnabled,
      accessTokenTtl: ttl(accessTtl),
      refreshTokenTtl: ttl(refreshTtl),
      idTokenAlg,
      accessTokenFormat: format,
      allowPlainPkce,
      errorCodes,
    };
    // Register: an empty advanced field is left to the server's default. Edit: only a changed one is
    // sent, and emptied it is null (back to the default, or removed).
    const changed = (key: keyof typeof initial, value: string) => (c ? value !== initial[key] : value.trim() !== '');
    const advanced = {
      ...(changed('webOrigins', webOrigins) ? { webOrigins: words(webOrigins).length ? words(webOrigins) : null } : {}),
      ...(changed('defaultAudience', defaultAudience) ? { defaultAudience: text(defaultAudience) } : {}),
      ...(changed('authMethod', authMethod) ? { tokenEndpointAuthMethod: authMethod || null } : {}),
      ...(changed('jwks', jwks) ? { jwks: text(jwks) } : {}),
      ...(changed('jwksUri', jwksUri) ? { jwksUri: text(jwksUri) } : {}),
      ...(changed('backchannel', backchannel) ? { backchannelLogoutUri: text(backchannel) } : {}),
      ...(changed('launch', launch) ? { initiateLoginUri: text(launch) } : {}),
      // Only when changed: naming owners is apps:write's, and an unchanged list is no change.
      ...(sameList(owners, c?.owners ?? []) ? {} : { owners }),
    };
    const result = await save.run(async () => {
      if (c)
        return { client: (await request(UpdateClientMutation, { clientId: c.clientId, input: { ...fields, ...advanced } })).updateClient };
      const r = (await request(RegisterClientMutation, { input: { ...fields, ...advanced, confidential } })).registerClient;
      return { client: r.client, secret: r.clientSecret };
    });
    if (result) p.onDone(result);
    // After the re-render, which opens "Advanced" when the error is in there.
    else setTimeout(() => (document.querySelector('#client-form [aria-invalid="true"]') as HTMLElement | null)?.focus());
  }

  return (
    <form id="client-form" class="panel" onSubmit={submit} aria-labelledby="client-form-title" aria-busy={save.busy} noValidate>
      <h2 id="client-form-title" tabIndex={-1}>
        {c ? `Edit ${c.name}` : 'Register a client'}
      </h2>
      <div class="grid">
        <Field
          id={id('name')}
          name="name"
          label="Name"
          value={name}
          onInput={setName}
          error={err}
          required
          hint="Shown on the sign-in and consent pages."
        />
        {c ? null : (
          <fieldset class="field">
            <legend>Client type</legend>
            <div class="check">
              <input
                type="radio"
                id="client-confidential"
                name="confidential"
                checked={confidential}
                onChange={() => setConfidential(true)}
              />
              <label for="client-confidential">Confidential: a server-side application with a secret</label>
            </div>
            <div class="check">
              <input type="radio" id="client-public" name="confidential" checked={!confidential} onChange={() => setConfidential(false)} />
              <label for="client-public">Public: a browser or mobile app, PKCE and no secret</label>
            </div>
          </fieldset>
        )}
        <Field
          id={id('redirect-uris')}
          name="redirectUris"
          label="Redirect URIs"
          value={redirectUris}
          onInput={setRedirectUris}
          error={err}
          multiline
          hint="One per line; https, or http for localhost only."
        />
        <Field
          id={id('logout-uris')}
          name="postLogoutRedirectUris"
          label="Post-logout redirect URIs"
          value={logoutUris}
          onInput={setLogoutUris}
          error={err}
          multiline
          hint="Where sign-out may send the browser back to. One per line."
        />
        <fieldset
          class={`field${err?.field === 'grantTypes' ? ' invalid' : ''}`}
          aria-describedby={err?.field === 'grantTypes' ? 'client-grants-error' : undefined}
        >
          <legend>Grant types</legend>
          {GRANTS.map(([grant, label]) => (
            <Checkbox
              key={grant}
              id={`client-grant-${grant.toLowerCase()}`}
              label={label}
              checked={grants.includes(grant)}
              onChange={(on) => setGrants((g) => (on ? [...g, grant] : g.filter((x) => x !== grant)))}
            />
          ))}
          {err?.field === 'grantTypes' ? (
            <p class="field-error" id="client-grants-error">
              {err.message}
            </p>
          ) : null}
        </fieldset>
        <Field id={id('scopes')} name="scopes" label="Scopes" value={scopes} onInput={setScopes} error={err} hint="Separated by spaces." />
        <Field
          id={id('roles')}
          name="roles"
          label="Roles"
          value={roles}
          onInput={setRoles}
          error={err}
          hint="The client's own roles; admin makes a client-credentials service account of the admin API."
        />
        {can('users:read') ? (
          <UsersPicker
            id="client-owners"
            name="owners"
            label="Owners"
            hint="Users who, with the app-owner role, change its redirect URIs, secret, access, roles and claims (nothing else), and see it alone."
            value={owners}
            onChange={setOwners}
            error={err}
          />
        ) : null}
        <fieldset class="field">
          <legend>Options</legend>
          <Checkbox id="client-consent" label="Ask each user's consent" checked={requireConsent} onChange={setRequireConsent} />
          <Checkbox id="client-sso" label="Browser sign-on enabled" checked={ssoEnabled} onChange={setSsoEnabled} />
          <Checkbox id="client-oauth" label="OAuth endpoints enabled" checked={oauthEnabled} onChange={setOauthEnabled} />
        </fieldset>
        <Field
          id={id('access-ttl')}
          name="accessTokenTtl"
          label="Access token lifetime (seconds)"
          value={accessTtl}
          onInput={setAccessTtl}
          error={err}
          inputMode="numeric"
          hint="Empty: the server's default."
        />
        <Field
          id={id('refresh-ttl')}
          name="refreshTokenTtl"
          label="Refresh token lifetime (seconds)"
          value={refreshTtl}
          onInput={setRefreshTtl}
          error={err}
          inputMode="numeric"
          hint="Empty: the server's default."
        />
        <div class="field">
          <label for="client-id-token-alg">id_token signing algorithm</label>
          <select id="client-id-token-alg" value={idTokenAlg} onChange={(e) => setIdTokenAlg(e.currentTarget.value as SigningAlgorithm)}>
            <option value="RS256">RS256</option>
            <option value="ES256">ES256</option>
          </select>
        </div>
        <div class="field">
          <label for="client-token-format">Access token format</label>
          <select id="client-token-format" value={format} onChange={(e) => setFormat(e.currentTarget.value as AccessTokenFormat)}>
            <option value="OPAQUE">Opaque (checked by the server)</option>
            <option value="JWT">JWT (RFC 9068, checked with the JWKS)</option>
          </select>
        </div>
      </div>
      <details
        class="advanced"
        open={advancedOpen || advancedError}
        onToggle={(e) => setAdvancedOpen((e.currentTarget as HTMLDetailsElement).open)}
      >
        <summary>Advanced</summary>
        <div class="grid">
          <Field
            id={id('web-origins')}
            name="webOrigins"
            label="Web origins"
            value={webOrigins}
            onInput={setWebOrigins}
            error={err}
            multiline
            hint={
              c
                ? 'Origins whose browser code may call the token and userinfo endpoints (CORS). One per line; empty: the redirect URIs’ origins.'
                : 'Origins whose browser code may call the token and userinfo endpoints (CORS), like https://app.example.com. One per line; empty: the redirect URIs’ origins.'
            }
          />
          <Field
            id={id('backchannel-logout-uri')}
            name="backchannelLogoutUri"
            label="Back-channel logout URI"
            value={backchannel}
            onInput={setBackchannel}
            error={err}
            type="url"
            hint="Where signed logout tokens are sent when a session ends. Empty: none."
          />
          <Field
            id={id('initiate-login-uri')}
            name="initiateLoginUri"
            label="Login initiation URL"
            value={launch}
            onInput={setLaunch}
            error={err}
            type="url"
            hint="initiate_login_uri: where “My applications” starts a sign-in to it (iss is added). Empty: not listed there."
          />
          <div class={`field${err?.field === 'tokenEndpointAuthMethod' ? ' invalid' : ''}`}>
            <label for="client-auth-method">Token endpoint authentication</label>
            <select
              id="client-auth-method"
              value={authMethod}
              aria-invalid={err?.field === 'tokenEndpointAuthMethod' ? 'true' : undefined}
              aria-describedby={err?.field === 'tokenEndpointAuthMethod' ? 'client-auth-method-error' : undefined}
              onChange={(e) => setAuthMethod(e.currentTarget.value as TokenEndpointAuthMethod | '')}
            >
              <option value="">Default (secret in Basic or form; none for a public client)</option>
              {AUTH_METHODS.map(([method, label]) => (
                <option key={method} value={method}>
                  {label}
                </option>
              ))}
            </select>
            {err?.field === 'tokenEndpointAuthMethod' ? (
              <p class="field-error" id="client-auth-method-error">
                {err.message}
              </p>
            ) : null}
          </div>
          <Field
            id={id('jwks-uri')}
            name="jwksUri"
            label="JWKS URI"
            value={jwksUri}
            onInput={setJwksUri}
            error={err}
            type="url"
            hint="The URL of the client's public keys, for private_key_jwt."
          />
          <Field
            id={id('jwks')}
            name="jwks"
            label="JWKS"
            value={jwks}
            onInput={setJwks}
            error={err}
            multiline
            hint={'Or the public keys themselves, as JSON ({"keys": […]}).'}
          />
          <Field
            id={id('default-audience')}
            name="defaultAudience"
            label="Default audience"
            value={defaultAudience}
            onInput={setDefaultAudience}
            error={err}
            hint="The access tokens' audience when a request names no resource. Empty: the server's userinfo URL."
          />
          <div class="field">
            <label for="client-error-codes">Error codes</label>
            <select id="client-error-codes" value={errorCodes} onChange={(e) => setErrorCodes(e.currentTarget.value as ErrorCodes)}>
              <option value="MAXKEY">MaxKey’s (invalid_code, …)</option>
              <option value="RFC6749">RFC 6749’s (invalid_grant, …), for stock OAuth libraries</option>
            </select>
          </div>
          <fieldset class="field">
            <legend>PKCE</legend>
            <Checkbox
              id="client-plain-pkce"
              label="Allow PKCE plain (only for an old client that cannot hash)"
              checked={allowPlainPkce}
              onChange={setAllowPlainPkce}
            />
          </fieldset>
        </div>
      </details>
      <ErrorNote error={err} labels={clientLabels} />
      <FormActions busy={save.busy} editing={Boolean(c)} label="Register client" onCancel={p.onCancel} />
    </form>
  );
}
