import { randomUUID } from 'node:crypto';
import { hashToken, randomToken, safeEqual } from '../crypto/tokens.ts';
import type { Actor, AuditLog } from '../audit/record.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import type { Transaction } from '../db/transaction.ts';
import type { ClientQueries } from './queries.ts';
import type { AccessTokenFormat, AuthMethod, Client, GrantType, IdTokenAlg } from './model.ts';
import { decrypt, encrypt } from '../crypto/secrets.ts';
import { checkAuthMethod } from './auth-method.ts';
import { clock } from '../clock.ts';
import { checkWebOrigin, webOriginsOf } from './web-origins.ts';
import type { ErrorCodeStyle } from '../errors/oauth.ts';
import { isResourceUri } from './resource.ts';
import { checkRoles } from './roles.ts';
import { ADMIN_SCOPE } from './scopes.ts';
import type { AddressRules } from '../outbound/address-rules.ts';
import { urlRefusal } from '../outbound/url-check.ts';
import { EVERYONE } from '../access/model.ts';
import {
  type AccessPolicyInput,
  type AppRoleInput,
  type ClaimMappingInput,
  checkAccess,
  checkRoles as checkAppRoles,
  checkClaimMappings,
  checkLaunchUrl,
} from '../access/validate.ts';
import { checkOwners } from '../admin-roles/owners.ts';
import { checkClientControl, checkClientRights, holdsRights } from '../admin-roles/rules.ts';

export interface RegisterClientInput {
  name: string;
  redirectUris: string[];
  clientId?: string;
  grantTypes?: GrantType[];
  scopes?: string[];
  roles?: string[];
  confidential?: boolean;
  requireConsent?: boolean;
  requireMfa?: boolean;
  allowPlainPkce?: boolean;
  /** Its sign-ins may use a Kerberos ticket (docs/identity-backends.md "Desktop single sign-on"). @default true */
  kerberos?: boolean;
  ssoEnabled?: boolean;
  oauthEnabled?: boolean;
  accessTokenTtl?: number | null;
  refreshTokenTtl?: number | null;
  postLogoutRedirectUris?: string[];
  idTokenAlg?: IdTokenAlg;
  accessTokenFormat?: AccessTokenFormat;
  /** Origins of the client's browser app, allowed by CORS (docs/connect-an-application.md). @default the redirect URIs' origins */
  webOrigins?: string[] | null;
  /** The error codes it reads (docs/connect-an-application.md). @default 'maxkey' */
  errorCodes?: ErrorCodeStyle;
  /** RFC 8707: its access tokens' audience when a request names no resource. @default the issuer's userinfo URL */
  defaultAudience?: string | null;
  /** @default none for a public client; for a confidential one null: Basic or post (the reference interface posts it) */
  tokenEndpointAuthMethod?: AuthMethod | null;
  jwks?: string | null;
  jwksUri?: string | null;
  /** Where back-channel logout notices are POSTed: an absolute http(s) URL. */
  backchannelLogoutUri?: string | null;
  /** Who may use it (docs/access-and-claims.md). @default everyone */
  access?: AccessPolicyInput | null;
  /** Its roles (GraphQL `applicationRoles`: a client's `roles` are its own). */
  appRoles?: readonly AppRoleInput[] | null;
  claimMappings?: readonly ClaimMappingInput[] | null;
  /** OIDC third-party initiated login: where "My applications" starts a sign-in to it. */
  initiateLoginUri?: string | null;
  /** User ids of its owners (docs/admin-api.md "Roles and permissions"); null: none. @default none */
  owners?: readonly string[] | null;
}

/** The access and release fields of an input, checked and given their defaults; undefined where the input leaves a field out. */
function applicationFields(input: Pick<RegisterClientInput, 'access' | 'appRoles' | 'claimMappings' | 'initiateLoginUri'>) {
  return {
    access: input.access === undefined ? undefined : checkAccess('access', input.access),
    appRoles: input.appRoles === undefined ? undefined : checkAppRoles('applicationRoles', input.appRoles),
    claimMappings: input.claimMappings === undefined ? undefined : checkClaimMappings('claimMappings', input.claimMappings),
    initiateLoginUri: input.initiateLoginUri === undefined ? undefined : checkLaunchUrl('initiateLoginUri', input.initiateLoginUri),
  };
}

const loopback = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A registered URL: at most 2000 characters, no spaces or control characters, absolute. */
function absoluteUrl(field: string, uri: string): URL {
  if (uri.length > 2000 || /[\x00-\x20\x7f]/.test(uri))
    throw new InputError(field, 'must be at most 2000 characters, no spaces or control characters');
  try {
    return new URL(uri);
  } catch {
    throw new InputError(field, `${JSON.stringify(uri)} is not an absolute URL`);
  }
}

/** Absolute, no fragment; https, or http for loopback only; custom schemes for native apps. */
export function checkRedirectUri(field: string, uri: string): void {
  const url = absoluteUrl(field, uri);
  if (url.hash || uri.includes('#')) throw new InputError(field, `${uri} must not have a fragment`);
  if (url.protocol === 'http:' && !loopback.has(url.hostname)) {
    throw new InputError(field, `${uri}: http is allowed only for loopback hosts; use https`);
  }
  if (['javascript:', 'data:', 'file:', 'vbscript:'].includes(url.protocol)) {
    throw new InputError(field, `${uri}: scheme ${url.protocol} is not allowed`);
  }
}

/** An absolute http(s) URL, no fragment (Back-Channel Logout 1.0, section 2.2). */
function checkBackchannelUri(uri: string): void {
  const field = 'backchannelLogoutUri';
  const url = absoluteUrl(field, uri);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InputError(field, `${uri}: must be http or https`);
  if (url.hash || uri.includes('#')) throw new InputError(field, `${uri} must not have a fragment`);
}

function validate(input: RegisterClientInput, outbound: AddressRules): void {
  const name = input.name.trim();
  if (!name || name.length > 200 || /[\x00-\x1f\x7f]/.test(name))
    throw new InputError('name', 'must be 1 to 200 characters, no control characters');
  if (input.redirectUris.length > 50) throw new InputError('redirectUris', 'at most 50');
  for (const u of input.redirectUris) checkRedirectUri('redirectUris', u);
  for (const u of input.postLogoutRedirectUris ?? []) checkRedirectUri('postLogoutRedirectUris', u);
  if (input.webOrigins && input.webOrigins.length > 50) throw new InputError('webOrigins', 'at most 50');
  for (const o of input.webOrigins ?? []) checkWebOrigin('webOrigins', o);
  if (input.errorCodes !== undefined && input.errorCodes !== 'maxkey' && input.errorCodes !== 'rfc6749')
    throw new InputError('errorCodes', 'must be maxkey or rfc6749');
  if (input.defaultAudience != null && !isResourceUri(input.defaultAudience))
    throw new InputError('defaultAudience', 'must be an absolute URI without fragment, at most 2000 characters');
  if (input.backchannelLogoutUri != null) checkBackchannelUri(input.backchannelLogoutUri);
  for (const key of ['accessTokenTtl', 'refreshTokenTtl'] as const) {
    const v = input[key];
    if (v != null && (!Number.isInteger(v) || v <= 0 || v > 365 * 24 * 3600)) {
      throw new InputError(key, 'must be a whole number of seconds from 1 to 31536000');
    }
  }
  for (const s of input.scopes ?? []) {
    if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)) throw new InputError('scopes', `${JSON.stringify(s)} is not a valid scope`);
  }
  if (input.clientId !== undefined && !/^[A-Za-z0-9._~-]{1,128}$/.test(input.clientId)) {
    throw new InputError('clientId', 'must be 1 to 128 of A-Z a-z 0-9 . _ ~ -');
  }
  checkRoles(input.roles ?? []);
  checkOwners('owners', input.owners);
  checkAuthMethod(input);
  // After the URLs' form is checked: none of Latchkey's calls may go to a refused address (docs/decisions.md).
  for (const field of ['jwksUri', 'backchannelLogoutUri'] as const) {
    const uri = input[field];
    // An empty value is no URL (checkAuthMethod passed it over the same way).
    const why = !uri ? undefined : urlRefusal(new URL(uri), outbound);
    if (why) throw new InputError(field, `${uri}: ${why}`);
  }
  const grants = input.grantTypes ?? [];
  if (input.confidential === false && grants.includes('client_credentials')) {
    throw new InputError('grantTypes', 'a public client cannot use client_credentials');
  }
  if ((grants.length === 0 || grants.includes('authorization_code')) && input.redirectUris.length === 0) {
    throw new InputError('redirectUris', 'the authorization code grant needs at least one redirect URI');
  }
}

/** Changes to a client through the admin API or the CLI: every field of registration, all optional. */
export type ClientPatch = Partial<Omit<RegisterClientInput, 'clientId'>>;

/**
 * Fields a client may be without: a null in an update clears them, or resets them to what
 * registration would choose. Every other field always has a value, so a null there is refused.
 */
const CLEARABLE = new Set([
  'accessTokenTtl',
  'refreshTokenTtl',
  'webOrigins',
  'defaultAudience',
  'backchannelLogoutUri',
  'jwks',
  'jwksUri',
  'tokenEndpointAuthMethod',
]);

/** The built-in clients: they cannot be deleted. */
const BUILT_IN = new Set(['admin-cli', 'admin-console']);

/**
 * A client holding rights beyond an application's (the admin role or scope, `scim`, `introspect`, or
 * a built-in admin client) has no owners: an owner changes its redirect URIs and rotates its secret,
 * which would be holding its rights (docs/admin-api.md "Application owners"). Refused either way
 * round, naming `owners` when they are being given, else the roles or scopes that would give the rights.
 */
function checkOwnedRights(client: Client, givingOwners: boolean): void {
  if (client.owners.length === 0 || !holdsRights(client)) return;
  if (givingOwners) {
    throw new InputError(
      'owners',
      `client ${client.clientId} holds the admin role or scope, scim or introspect, or is built in: such a client has no owners`,
    );
  }
  throw new InputError(
    client.scopes.includes(ADMIN_SCOPE) ? 'scopes' : 'roles',
    `client ${client.clientId} has owners: a client with owners holds no admin, scim or introspect role nor the admin scope (remove its owners first)`,
  );
}

/** What a change needs of a transaction (named here: the root that builds it imports this file). */
interface ClientTransaction {
  queries: { clients: ClientQueries };
  audit: Pick<AuditLog, 'change'>;
}

/** A secret for the client: none for private_key_jwt; kept encrypted as well for client_secret_jwt. */
function secretFields(
  method: AuthMethod,
  key: Buffer,
): { clientSecret: string | null; secretHash: string | null; secretEnc: string | null } {
  if (method === 'none' || method === 'private_key_jwt') return { clientSecret: null, secretHash: null, secretEnc: null };
  const clientSecret = randomToken(32);
  return {
    clientSecret,
    secretHash: hashToken(clientSecret),
    secretEnc: method === 'client_secret_jwt' ? encrypt(key, clientSecret) : null,
  };
}

export const clientService = (
  queries: ClientQueries,
  deps: { transaction: Transaction<ClientTransaction>; secretKey: Buffer; outbound: AddressRules },
) => ({
  find: queries.find,
  keptCopy: queries.keptCopy,
  list: queries.list,
  page: queries.page,

  /** Registers a client; the secret is returned here only and stored as a hash. */
  async register(input: RegisterClientInput, actor: Actor): Promise<{ client: Client; clientSecret: string | null }> {
    validate(input, deps.outbound);
    if (input.clientId !== undefined && BUILT_IN.has(input.clientId))
      throw new InputError('clientId', `${input.clientId} is reserved for a built-in client`);
    const confidential = input.confidential ?? true;
    // Unset: a confidential client may use Basic or post, as the reference interface sends the secret
    // as form parameters (the MaxKey interface: docs/endpoints.md); choosing a method restricts it to that.
    const method = input.tokenEndpointAuthMethod ?? (confidential ? null : 'none');
    const { clientSecret, secretHash, secretEnc } = secretFields(method ?? 'client_secret_basic', deps.secretKey);
    const own = applicationFields(input);
    const now = clock.now();
    const client: Client = {
      clientId: input.clientId ?? randomUUID(),
      name: input.name.trim(),
      secretHash,
      confidential,
      redirectUris: input.redirectUris,
      postLogoutRedirectUris: input.postLogoutRedirectUris ?? [],
      grantTypes: input.grantTypes ?? ['authorization_code', 'refresh_token'],
      scopes: input.scopes ?? ['openid', 'profile', 'email'],
      roles: input.roles ?? [],
      requireConsent: input.requireConsent ?? false,
      requireMfa: input.requireMfa ?? false,
      allowPlainPkce: input.allowPlainPkce ?? false,
      kerberos: input.kerberos ?? true,
      ssoEnabled: input.ssoEnabled ?? true,
      oauthEnabled: input.oauthEnabled ?? true,
      accessTokenTtl: input.accessTokenTtl ?? null,
      refreshTokenTtl: input.refreshTokenTtl ?? null,
      idTokenAlg: input.idTokenAlg ?? 'RS256',
      accessTokenFormat: input.accessTokenFormat ?? 'opaque',
      webOrigins: input.webOrigins ?? null,
      errorCodes: input.errorCodes ?? 'maxkey',
      defaultAudience: input.defaultAudience ?? null,
      tokenEndpointAuthMethod: method,
      jwks: input.jwks ?? null,
      jwksUri: input.jwksUri ?? null,
      secretEnc,
      backchannelLogoutUri: input.backchannelLogoutUri ?? null,
      access: own.access ?? EVERYONE,
      appRoles: own.appRoles ?? [],
      claimMappings: own.claimMappings ?? [],
      initiateLoginUri: own.initiateLoginUri ?? null,
      owners: checkOwners('owners', input.owners),
      createdAt: now,
      updatedAt: now,
    };
    checkOwnedRights(client, true);
    // An admin API caller gives a client no right it lacks (docs/admin-api.md "Roles and permissions").
    if (actor.grant) checkClientRights(actor.grant, undefined, client);
    await deps.transaction(async (tx) => {
      if (await tx.queries.clients.find(client.clientId)) throw new InputError('clientId', `${client.clientId} is taken`);
      await tx.queries.clients.insert(client, webOriginsOf(client));
      await tx.audit.change('client.register', actor, { clientId: client.clientId });
    });
    return { client, clientSecret };
  },

  /**
   * Changes a client after the same checks as registration. `undefined` leaves a field as it is;
   * `null` clears it (GraphQL's null): the lifetimes go back to the server's, webOrigins to the
   * redirect URIs' origins, tokenEndpointAuthMethod to registration's default; defaultAudience, jwks,
   * jwksUri and backchannelLogoutUri are removed. A null for a field that always has a value is refused.
   */
  update(clientId: string, patch: ClientPatch, actor: Actor): Promise<Client> {
    return deps.transaction(async (tx) => {
      const client = await tx.queries.clients.find(clientId);
      if (!client) throw new NotFoundError('clientId', `no client ${clientId}`);
      // Judged on what it holds now: its redirect URIs, owners and the rest are its rights (docs/admin-api.md "Nobody grants what they lack").
      if (actor.grant) checkClientControl(actor.grant, client, 'change it');
      const next: Client = { ...client, updatedAt: clock.now() };
      // Checked and defaulted here; a null clears them (everyone, no roles, no mappings, no launch URL).
      const { access, appRoles, claimMappings, initiateLoginUri, owners, ...rest } = patch;
      if (owners !== undefined) next.owners = checkOwners('owners', owners);
      const own = applicationFields({ access, appRoles, claimMappings, initiateLoginUri });
      for (const [key, value] of Object.entries(own)) if (value !== undefined) (next as unknown as Record<string, unknown>)[key] = value;
      for (const [key, value] of Object.entries(rest)) {
        if (value === undefined) continue;
        if (value === null && !CLEARABLE.has(key)) throw new InputError(key, 'cannot be null: leave it out to keep it');
        (next as unknown as Record<string, unknown>)[key] = value;
      }
      // As registration chooses it: Basic or post for a confidential client, none for a public one.
      if (patch.tokenEndpointAuthMethod === null && !next.confidential) next.tokenEndpointAuthMethod = 'none';
      validate(next, deps.outbound);
      checkOwnedRights(next, owners !== undefined);
      if (actor.grant) checkClientRights(actor.grant, client, next);
      // Only client_secret_jwt keeps the secret itself; switching to it needs a rotation to have one.
      if (next.tokenEndpointAuthMethod !== 'client_secret_jwt') next.secretEnc = null;
      await tx.queries.clients.update(next, webOriginsOf(next));
      await tx.audit.change('client.update', actor, { clientId });
      return next;
    });
  },

  /** A new secret, returned here only; the old one stops working with this write. */
  rotateSecret(clientId: string, actor: Actor): Promise<{ client: Client; clientSecret: string }> {
    return deps.transaction(async (tx) => {
      const client = await tx.queries.clients.find(clientId);
      if (!client) throw new NotFoundError('clientId', `no client ${clientId}`);
      // Its new secret is its rights: a client_credentials token of an admin client is an admin's.
      if (actor.grant) checkClientControl(actor.grant, client, 'rotate its secret');
      if (!client.confidential) throw new InputError('clientId', 'a public client has no secret');
      if (client.tokenEndpointAuthMethod === 'private_key_jwt')
        throw new InputError('clientId', 'a private_key_jwt client has keys, not a secret');
      const { clientSecret, secretHash, secretEnc } = secretFields(client.tokenEndpointAuthMethod ?? 'client_secret_basic', deps.secretKey);
      const next = { ...client, secretHash, secretEnc, updatedAt: clock.now() };
      await tx.queries.clients.update(next, webOriginsOf(next));
      await tx.audit.change('client.rotate_secret', actor, { clientId });
      return { client: next, clientSecret: clientSecret! };
    });
  },

  /** Deletes a client; its codes, tokens and consents go with it (ON DELETE CASCADE). Built-ins stay. */
  async remove(clientId: string, actor: Actor): Promise<boolean> {
    if (BUILT_IN.has(clientId)) throw new InputError('clientId', `${clientId} is built in and cannot be deleted`);
    return deps.transaction(async (tx) => {
      // As for a user: deleting an admin or SCIM client takes what it gives (docs/admin-api.md "Nobody grants what they lack").
      const client = actor.grant ? await tx.queries.clients.find(clientId) : undefined;
      if (client && actor.grant) checkClientControl(actor.grant, client, 'delete it');
      const removed = await tx.queries.clients.remove(clientId);
      if (removed) await tx.audit.change('client.delete', actor, { clientId });
      return removed;
    });
  },

  /**
   * The built-in public clients, made on start when missing (docs/admin-api.md). `admin-cli`: the password
   * grant with no secret, so curl alone can get a token. `admin-console`: the web console at /admin,
   * signing in with the code flow and PKCE. Any user may get a token from either; only admins get
   * anything from the admin API with it.
   *
   * The console's redirect URIs follow `publicUrl` on every start, replacing the previous ones: a
   * host name the deployment has left must not keep receiving admin sign-ins.
   */
  async ensureBuiltin(publicUrl: string): Promise<void> {
    const now = clock.now();
    const builtin = (clientId: string, name: string, fields: Partial<Client>): Client => ({
      clientId,
      name,
      secretHash: null,
      confidential: false,
      redirectUris: [],
      postLogoutRedirectUris: [],
      grantTypes: ['password', 'refresh_token'],
      // The admin scope is granted only to users with the admin role (docs/admin-api.md).
      scopes: ['openid', 'profile', 'email', 'admin'],
      roles: [],
      requireConsent: false,
      requireMfa: false,
      allowPlainPkce: false,
      kerberos: true,
      ssoEnabled: false,
      oauthEnabled: true,
      accessTokenTtl: null,
      refreshTokenTtl: null,
      idTokenAlg: 'RS256',
      accessTokenFormat: 'opaque',
      webOrigins: null,
      errorCodes: 'maxkey',
      defaultAudience: null,
      tokenEndpointAuthMethod: 'none',
      jwks: null,
      jwksUri: null,
      secretEnc: null,
      backchannelLogoutUri: null,
      access: EVERYONE,
      appRoles: [],
      claimMappings: [],
      initiateLoginUri: null,
      owners: [],
      createdAt: now,
      updatedAt: now,
      ...fields,
    });
    // Two servers starting at once on one database may both find a client missing: the loser of the
    // insert finds the winner's row and goes on.
    const insertIfAbsent = (client: Client) =>
      queries.insert(client, webOriginsOf(client)).catch(async (err: unknown) => {
        if (!(await queries.find(client.clientId))) throw err;
      });
    if (!(await queries.find('admin-cli'))) await insertIfAbsent(builtin('admin-cli', 'Latchkey admin CLI', {}));

    const consoleUris = { redirectUris: [`${publicUrl}/admin/callback`], postLogoutRedirectUris: [`${publicUrl}/admin/signed-out`] };
    const existing = await queries.find('admin-console');
    if (!existing) {
      await insertIfAbsent(
        builtin('admin-console', 'Latchkey admin console', {
          ...consoleUris,
          grantTypes: ['authorization_code', 'refresh_token'],
          ssoEnabled: true,
          // Short-lived access tokens, renewed with the refresh token, which lasts a working day:
          // both live only in the console's memory, and a closed tab leaves nothing behind.
          accessTokenTtl: 900,
          refreshTokenTtl: 8 * 3600,
        }),
      );
    } else if (
      JSON.stringify([existing.redirectUris, existing.postLogoutRedirectUris]) !==
      JSON.stringify([consoleUris.redirectUris, consoleUris.postLogoutRedirectUris])
    ) {
      const next = { ...existing, ...consoleUris, updatedAt: now };
      await queries.update(next, webOriginsOf(next));
    }
  },

  /** The origins whose browser apps may call this client's endpoints (CORS, docs/connect-an-application.md). */
  webOrigins: webOriginsOf,

  /** Whether some client's browser app has this origin: a CORS preflight names no client. */
  originRegistered: (origin: string) => queries.originRegistered(origin),

  /** The secret of a client_secret_jwt client (its HS256 key); null when none is stored. */
  jwtSecret(client: Client): string | null {
    return client.secretEnc ? decrypt(deps.secretKey, client.secretEnc) : null;
  },

  useAssertionJti: (clientId: string, jti: string, expiresAt: number) => queries.useAssertionJti(clientId, jti, expiresAt),

  /** Constant-time check of a presented secret against the stored hash. */
  secretMatches(client: Client, secret: string): boolean {
    return client.secretHash !== null && safeEqual(client.secretHash, hashToken(secret));
  },
});

export type ClientService = ReturnType<typeof clientService>;
