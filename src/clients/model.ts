import type { AccessPolicy, AppRole, ClaimMapping } from '../access/model.ts';
import type { ErrorCodeStyle } from '../errors/oauth.ts';

/**
 * An OAuth client's registration and the words it is described in.
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

export const GRANT_TYPES = [
  'authorization_code',
  'password',
  'refresh_token',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:device_code',
] as const;

export type GrantType = (typeof GRANT_TYPES)[number];

export type IdTokenAlg = 'RS256' | 'ES256';

/** Opaque (the default) or signed JWTs per RFC 9068, for resource servers that validate locally. */
export type AccessTokenFormat = 'opaque' | 'jwt';

/** How a client proves who it is at the token, introspection and revocation endpoints (docs/connect-an-application.md). */
export const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt', 'none'] as const;

export type AuthMethod = (typeof AUTH_METHODS)[number];

export interface Client {
  clientId: string;
  name: string;
  secretHash: string | null;
  confidential: boolean;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: GrantType[];
  scopes: string[];
  roles: string[];
  requireConsent: boolean;
  /** Sign-ins for this client need a second factor (docs/multi-factor-sign-in.md), whatever `mfa.required` says. */
  requireMfa: boolean;
  /** May use PKCE `plain` (RFC 9700 2.1.1: only S256 otherwise). */
  allowPlainPkce: boolean;
  /** Its sign-ins may use a Kerberos ticket (docs/identity-backends.md "Desktop single sign-on"); false: the login form only. */
  kerberos: boolean;
  ssoEnabled: boolean;
  oauthEnabled: boolean;
  accessTokenTtl: number | null;
  refreshTokenTtl: number | null;
  idTokenAlg: IdTokenAlg;
  accessTokenFormat: AccessTokenFormat;
  /** The origins set for its browser app (docs/connect-an-application.md, CORS); null: never set, so its redirect URIs' origins. */
  webOrigins: string[] | null;
  /** The error codes it reads (docs/connect-an-application.md): the interface document's, or RFC 6749's. */
  errorCodes: ErrorCodeStyle;
  /** RFC 8707: the `aud` of its access tokens when a request names no resource; null: the issuer's userinfo. */
  defaultAudience: string | null;
  /** null: registered before the field existed, so Basic or post (a confidential client) as before. */
  tokenEndpointAuthMethod: AuthMethod | null;
  /** A JWKS (JSON text) or its URL, for `private_key_jwt`. */
  jwks: string | null;
  jwksUri: string | null;
  /** The secret of a `client_secret_jwt` client, encrypted under LATCHKEY_SECRET. */
  secretEnc: string | null;
  /** Where back-channel logout notices go (OIDC Back-Channel Logout 1.0); null: none. */
  backchannelLogoutUri: string | null;
  /** Who may use it (docs/access-and-claims.md); everyone by default. */
  access: AccessPolicy;
  /** Its roles and who holds them: the `roles` claim of its tokens. */
  appRoles: AppRole[];
  /** The claims it receives beyond the scopes' standard ones. */
  claimMappings: ClaimMapping[];
  /** OIDC third-party initiated login: where "My applications" starts a sign-in to it; null: not listed there. */
  initiateLoginUri: string | null;
  /** User ids of its owners, who may read and change it with the `app-owner` role (docs/admin-api.md "Roles and permissions"). */
  owners: string[];
  createdAt: number;
  updatedAt: number;
}
