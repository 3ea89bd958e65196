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
  /**
   * What the backend reported beyond the standard fields (a directory's `extraAttributes`, an
   * upstream's `extraClaims`) or an admin set for a database user: what claim and attribute
   * mappings read (docs/access-and-claims.md). Empty for most users.
   */
  attributes: Record<string, unknown>;
  disabled: boolean;
  /**
   * Who disabled the record: `admin` (the admin API, the console), `directory` (a directory sync or a
   * SCIM client found the user gone or disabled: docs/directory-sync.md). Null while enabled. Only
   * a `directory` disabling is undone when the directory shows the user enabled again.
   */
  disabledBy: DisabledBy | null;
  createdAt: number;
  updatedAt: number;
}

/** Who disabled a user record (`User.disabledBy`). */
export type DisabledBy = 'admin' | 'directory';
