import type { AppRole, ClaimMapping } from '../access/model.ts';
import type { Amr } from '../login/model.ts';
import type { User } from '../users/model.ts';

/**
 * Codes, refresh tokens, access grants and device codes as the services see them.
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

export interface CodeRow {
  codeHash: string;
  clientId: string;
  userId: string;
  sessionId: string | null;
  redirectUri: string;
  scope: string;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  authTime: number;
  /** How the user signed in (RFC 8176), for the id_token; null for codes issued before it was kept. */
  amr: Amr[] | null;
  /** RFC 8707: the resources the authorization request named (space-separated); the token request may name only these. */
  resource: string | null;
  expiresAt: number;
  /** Refused before it was redeemed: the user's credentials changed, or its session ended (docs/decisions.md). */
  revokedAt: number | null;
  /** When the code's SSO session expires; null when that session is gone. */
  sessionExpiresAt: number | null;
  /** Its user as stored now, read with the code; undefined when deleted. */
  user: User | undefined;
}

export interface RefreshRow {
  tokenHash: string;
  familyId: string;
  clientId: string;
  userId: string;
  scope: string;
  sessionId: string | null;
  codeHash: string | null;
  authTime: number | null;
  amr: Amr[] | null;
  /** RFC 8707: the resources its access tokens may be for (space-separated), kept through rotation. */
  resource: string | null;
  expiresAt: number;
  rotatedAt: number | null;
  revokedAt: number | null;
  /** Its client may still use OAuth (`oauthEnabled`), read with the token. */
  clientOauthEnabled: boolean;
  /** Its user as stored now, read with the token; undefined when deleted. */
  user: User | undefined;
}

/** What new tokens are issued for, spent in the same transaction: a code (by hash) or a refresh token. */
export type Spend = { code: string } | { refresh: string };

/** An access token as the resources see it: its scope, its client, and its user (none for client_credentials). */
export interface AccessGrant {
  clientId: string;
  /** The user the token was issued for (null for client_credentials), even when the user is gone. */
  userId: string | null;
  /** The SSO session the token was issued in (null for grants without a browser). */
  sessionId: string | null;
  scopes: string[];
  /** RFC 8707: whom the token is for (its JWT's `aud`); null for a token issued before it was kept. */
  audience: string | null;
  expiresAt: number;
  createdAt: number;
  /**
   * Its client as the resources need it: whether it may use OAuth, its own roles and scopes, and what
   * it is told of a user (docs/access-and-claims.md): its application roles and claim mappings.
   */
  client: { oauthEnabled: boolean; roles: string[]; scopes: string[]; appRoles: AppRole[]; claimMappings: ClaimMapping[] };
  user: Pick<
    User,
    'id' | 'backend' | 'username' | 'email' | 'emailVerified' | 'displayName' | 'groups' | 'roles' | 'attributes' | 'disabled'
  > | null;
}

export interface DeviceRow {
  deviceCodeHash: string;
  userCode: string;
  clientId: string;
  scope: string;
  status: DeviceStatus;
  userId: string | null;
  sessionId: string | null;
  authTime: number | null;
  amr: string | null;
  intervalS: number;
  polledAt: number | null;
  expiresAt: number;
}

export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'used';
