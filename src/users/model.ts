/**
 * A local user record: the one home of the `User` type (docs/development.md, "One home per type").
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

export interface User {
  id: string;
  backend: string;
  externalId: string;
  username: string;
  email: string | null;
  /** False for an upstream's address that another account held first: kept, never released as verified. */
  emailVerified: boolean;
  displayName: string | null;
  passwordHash: string | null;
  roles: string[];
  groups: string[];
  disabled: boolean;
  createdAt: number;
  updatedAt: number;
}
