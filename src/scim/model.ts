/**
 * SCIM 2.0 (docs/scim-provisioning.md "What the endpoint supports"): the types of the service
 * provider's resources and its callers. A model module: types and their constants, no SQL.
 */

/** A SCIM resource as JSON: a User or a Group with `schemas`, `id` and `meta`, or a part of one. */
export type ScimDocument = Record<string, unknown>;

/** Who calls the SCIM endpoint: a SCIM secret token or a client with the role `scim`, and the one backend it may write. */
export interface ScimCaller {
  backend: string;
  /** The SCIM token's id (scim_tokens.id); null for a client's access token. */
  tokenId: string | null;
  /** The client whose client_credentials token was presented; null for a SCIM token. */
  clientId: string | null;
}

/** A group a SCIM client pushed: a group of section 15's access policies for its members. */
export interface ScimGroup {
  id: string;
  backend: string;
  displayName: string;
  externalId: string | null;
  createdAt: number;
  updatedAt: number;
}

/** A user of a SCIM backend as SCIM sees it: the Latchkey record's id and state, and the document a client wrote. */
export interface ScimUserRecord {
  id: string;
  backend: string;
  userName: string;
  disabled: boolean;
  /** The document as written, without `password`, `id`, `meta` or the read-only `groups`. */
  document: ScimDocument;
  createdAt: number;
  updatedAt: number;
}

/** A group membership as the users' and the groups' representations show it. */
export interface ScimMembership {
  groupId: string;
  userId: string;
  /** The group's displayName (in a user's `groups`). */
  groupName: string;
}

/** How a list read is narrowed in SQL (src/scim/filters.ts): one `eq` on an indexed column. */
export interface SqlNarrowing {
  column: 'id' | 'username' | 'externalId' | 'displayName';
  value: string;
}

/** RFC 7644 §3.4.2: a list request's parameters, already read from the query or a `.search` body. */
export interface ScimListRequest {
  filter?: string;
  /** 1-based. */
  startIndex: number;
  /** How many to return; 0 answers totalResults only. */
  count: number;
  attributes?: string[];
  excludedAttributes?: string[];
}

/** RFC 7644 §3.4.2: a page of a list. */
export interface ScimListPage {
  totalResults: number;
  startIndex: number;
  resources: ScimDocument[];
}

/** RFC 7644 §3.12 Table 9: the error detail codes. */
export type ScimErrorType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

export const SCIM_SCHEMAS = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  enterpriseUser: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  listResponse: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  searchRequest: 'urn:ietf:params:scim:api:messages:2.0:SearchRequest',
  patchOp: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
} as const;

/** The page sizes of list requests (ServiceProviderConfig `filter.maxResults`). */
export const SCIM_PAGE = { default: 100, max: 1000 } as const;

/** A SCIM client's secret token as it is kept (docs/scim-provisioning.md "Tokens"): the secret itself is shown once, never stored. */
export interface ScimToken {
  id: string;
  /** The `plugin: scim` backend whose users and groups the token's requests may reach, and no other. */
  backend: string;
  /** The administrator's note ("Entra ID provisioning"); empty when none. */
  description: string;
  /** The admin user (or the admin client) who created it; null for the CLI or the server. */
  createdBy: string | null;
  createdAt: number;
  /** When a request last carried it, to the minute; null when never. */
  lastUsedAt: number | null;
}
