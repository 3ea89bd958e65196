/**
 * Who may use an application and what it is told (docs/access-and-claims.md): an application's access
 * policy, its roles, and its claim (OIDC) or attribute (SAML) mappings. A model module: types and
 * their constants, no SQL.
 */

export type AccessMode = 'everyone' | 'assigned';

export interface AccessPolicy {
  mode: AccessMode;
  /** Group names or DNs as the backend reports them. */
  groups: string[];
  /** User ids. */
  users: string[];
  /** Identity backend or upstream ids. */
  backends: string[];
}

export const EVERYONE: AccessPolicy = Object.freeze({ mode: 'everyone', groups: [], users: [], backends: [] }) as AccessPolicy;

export interface AppRole {
  name: string;
  groups: string[];
  users: string[];
}

export const MAPPING_SOURCES = ['attribute', 'groups', 'roles', 'static', 'userid', 'username', 'email'] as const;
export type MappingSource = (typeof MAPPING_SOURCES)[number];

export const CLAIM_TARGETS = ['id_token', 'userinfo', 'access_token', 'introspection'] as const;
export type ClaimTarget = (typeof CLAIM_TARGETS)[number];

/** Where one mapped value comes from; shared by claims and SAML attributes. */
export interface ValueSource {
  source: MappingSource;
  attribute: string | null;
  value: string | null;
  groupFilter: string | null;
  multiValued: boolean;
}

export interface ClaimMapping extends ValueSource {
  claim: string;
  /** Only when the grant holds this scope; null: always. */
  scope: string | null;
  targets: ClaimTarget[];
}

export const ATTRIBUTE_NAME_FORMATS = ['uri', 'basic', 'unspecified'] as const;
export type AttributeNameFormat = (typeof ATTRIBUTE_NAME_FORMATS)[number];

export interface AttributeMapping extends ValueSource {
  name: string;
  nameFormat: AttributeNameFormat;
  friendlyName: string | null;
}

/**
 * Claims an application can never be given by a mapping: the ones OIDC and OAuth (JWT, token exchange,
 * introspection, security event tokens) give a meaning of their own, and `email_verified`, which only
 * Latchkey may assert (docs/access-and-claims.md "Claim mappings").
 */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set([
  'sub',
  'iss',
  'aud',
  'exp',
  'nbf',
  'iat',
  'jti',
  'typ',
  'nonce',
  'acr',
  'amr',
  'azp',
  'sid',
  'auth_time',
  'at_hash',
  'c_hash',
  's_hash',
  'cnf',
  'act',
  'may_act',
  'client_id',
  'scope',
  'token_type',
  'active',
  'events',
  'email_verified',
]);

/** What an application's rules read of a user. */
export interface Member {
  id: string;
  backend: string;
  username: string;
  email: string | null;
  groups: string[];
  attributes: Record<string, unknown>;
  disabled: boolean;
}

/** Why a user may or may not use an application. */
export type AccessDecision =
  | { allowed: true; reason: 'everyone' | 'user' | `group:${string}` | `backend:${string}` }
  | { allowed: false; reason: 'not_assigned' | 'disabled' };
