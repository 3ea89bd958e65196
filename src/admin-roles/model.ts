/**
 * Admin roles and the permissions they give (docs/admin-api.md "Roles and permissions").
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

/**
 * The fixed list of permissions: every admin API operation names one of them (the `@requires`
 * directive of graphql/*.graphql), and a role is a set of them.
 */
export const PERMISSIONS = [
  'users:read',
  'users:write',
  'users:enable',
  'users:credentials',
  'users:mfa',
  'sessions:end',
  'apps:read',
  'apps:write',
  'apps:owned',
  'keys:manage',
  'backends:read',
  'audit:read',
  'webhooks:manage',
  'roles:manage',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export const isPermission = (p: string): p is Permission => (PERMISSIONS as readonly string[]).includes(p);

/** The role that holds every permission, and the only one that may give itself. */
export const ADMIN_ROLE = 'admin';

/** A named set of permissions: built in, or made with `createAdminRole`. */
export interface AdminRole {
  name: string;
  description: string;
  permissions: Permission[];
  builtIn: boolean;
  /** Epoch ms; null for a built-in role. */
  createdAt: number | null;
  updatedAt: number | null;
}

const builtIn = (name: string, description: string, permissions: readonly Permission[]): AdminRole => ({
  name,
  description,
  permissions: [...permissions],
  builtIn: true,
  createdAt: null,
  updatedAt: null,
});

/**
 * The built-in roles. `helpdesk` enables and disables users through `users:enable`, a permission of
 * its own: `users:write` (create, rename, delete, change groups) would give it too much.
 */
export const BUILT_IN_ROLES: readonly AdminRole[] = [
  builtIn(ADMIN_ROLE, 'Every permission.', PERMISSIONS),
  builtIn(
    'helpdesk',
    "Reads users and groups; sends reset mails, sets passwords, resets MFA, enables and disables users, ends a user's sessions.",
    ['users:read', 'users:enable', 'users:credentials', 'users:mfa', 'sessions:end'],
  ),
  builtIn('auditor', 'Reads everything, the audit log included; changes nothing and never sees a secret.', [
    'users:read',
    'apps:read',
    'backends:read',
    'audit:read',
  ]),
  builtIn(
    'app-owner',
    'Reads and changes the applications whose owners name the user: redirect URIs, secret rotation, access policy, roles and claims.',
    ['apps:owned'],
  ),
];

export const BUILT_IN_NAMES: ReadonlySet<string> = new Set(BUILT_IN_ROLES.map((r) => r.name));

/**
 * What a caller of the admin API holds, read once per request: its admin roles, each permission
 * with the role that gave it (the audit trail names both), and every role's permissions as they
 * were then, to judge a role the caller would give (no escalation).
 */
export interface AdminGrant {
  /** The user acting (null: a client acting for itself). */
  userId: string | null;
  /** The caller's admin roles, built-in or custom, in the order they hold them; names no role defines are left out. */
  roles: string[];
  /** Each permission held, and the first of `roles` that gives it. */
  sources: ReadonlyMap<Permission, string>;
  /** Every role's permissions, built-in and custom, by name. */
  catalogue: ReadonlyMap<string, readonly Permission[]>;
}

/**
 * The SQL `like` pattern (with `escape '\'`) that finds `userId` in an application's JSON list of
 * owners: the quoted id with its `%`, `_` and `\` escaped, so no id matches part of another.
 */
export const ownerPattern = (userId: string): string => `%${JSON.stringify(userId).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
