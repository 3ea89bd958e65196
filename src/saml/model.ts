import type { AccessPolicy, AppRole, AttributeMapping } from '../access/model.ts';
/**
 * A registered SAML service provider and its part in a session.
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

/** The NameID formats Latchkey issues (docs/saml-applications.md), by their short names. */
export const NAME_ID_FORMATS = ['persistent', 'emailAddress', 'unspecified', 'transient'] as const;

export type NameIdFormat = (typeof NAME_ID_FORMATS)[number];

/** A registered SAML service provider: the SAML sibling of an OAuth client. */
export interface ServiceProvider {
  /** A short id (uuid) for the places that hold 128 characters: audit events, the sign-in's flow. */
  id: string;
  entityId: string;
  name: string;
  /** Where responses may go; the first is the default when a request names none. */
  assertionConsumerServiceUrls: string[];
  /**
   * The metadata's `index` of each URL above, in the same order; null when the URLs were given
   * explicitly, and then a URL's index is its position.
   */
  acsIndexes: number[] | null;
  /** Its HTTP-Redirect SingleLogoutService: told of a logout that comes from another SP, in the browser. */
  singleLogoutServiceUrl: string | null;
  /**
   * Its SOAP SingleLogoutService: told of every other session end, server to server
   * (docs/saml-applications.md "Single logout by SOAP"); null: it is not.
   */
  singleLogoutSoapUrl: string | null;
  /** PEM: checks its signed requests. */
  signingCertificate: string | null;
  /** PEM: its assertions are encrypted to it (when `encryptAssertions`). */
  encryptionCertificate: string | null;
  nameIdFormat: NameIdFormat;
  /** The attributes released: among uid, mail, displayName, groups. */
  attributes: string[];
  signAssertions: boolean;
  signResponses: boolean;
  encryptAssertions: boolean;
  wantAuthnRequestsSigned: boolean;
  allowIdpInitiated: boolean;
  /** Who may use it (docs/access-and-claims.md); everyone by default. */
  access: AccessPolicy;
  /** Its roles and who holds them: an attribute of its assertions, named `rolesAttribute`. */
  appRoles: AppRole[];
  /** The attributes it receives, replacing the fixed set (`attributes`); null: the fixed set. */
  attributeMappings: AttributeMapping[] | null;
  /** The user attribute an `unspecified` NameID carries; null: the username. */
  nameIdAttribute: string | null;
  /** The name of the roles attribute; null: `roles`. */
  rolesAttribute: string | null;
  /** User ids of its owners, who may read and change it with the `app-owner` role (docs/admin-api.md "Roles and permissions"). */
  owners: string[];
  createdAt: number;
  updatedAt: number;
}

/** A service provider that got an assertion in a session: told when the session ends by logout. */
export interface Participant {
  spId: string;
  nameId: string;
  nameIdFormat: NameIdFormat;
}

/**
 * A signed LogoutRequest still to deliver by SOAP to an SP of an ended session (table `saml_logouts`):
 * what the request names, kept from the participant, since the session and its participants are gone.
 */
export interface QueuedSamlLogout {
  id: string;
  spId: string;
  userId: string;
  nameId: string;
  nameIdFormat: NameIdFormat;
  /** The assertions' `SessionIndex`: the session's `sid`. */
  sessionIndex: string;
  /** Deliveries tried so far. */
  attempts: number;
}

/** Which sessions end: one, or a user's but `except` (session-ends.ts). */
export type EndingSessions = { sessionId: string } | { userId: string; except?: string };

/** An SP with a SOAP SingleLogoutService that got an assertion in a session that ends. */
export interface SamlLogoutTarget {
  sessionId: string;
  userId: string;
  spId: string;
  nameId: string;
  nameIdFormat: NameIdFormat;
}
