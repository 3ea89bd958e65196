/**
 * The permissions admin roles are made of and the built-in roles' share of them (docs/admin-api.md
 * "Roles and permissions"), fixed by the product. The console keeps its own copy, being a client of the
 * API and nothing more; test/console/roles.test.ts fails when it differs from the server's.
 */

/** The fixed list, in the API's order. */
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

/**
 * The built-in roles' permissions: enough to tell which users' roles reach beyond the signed-in admin's
 * own, whom the API lets nobody act on. A holder of roles:manage reads the custom roles too; to anyone
 * else a custom role's holder is judged by the API alone.
 */
export const BUILT_IN_ROLES: Readonly<Record<string, readonly Permission[]>> = {
  admin: PERMISSIONS,
  helpdesk: ['users:read', 'users:enable', 'users:credentials', 'users:mfa', 'sessions:end'],
  auditor: ['users:read', 'apps:read', 'backends:read', 'audit:read'],
  'app-owner': ['apps:owned'],
};

/**
 * What a client's own roles give, and so what changing it (or rotating its secret, deleting it) takes:
 * `admin` an admin, as do the `admin` scope and the built-in admin clients. test/admin/roles.test.ts
 * fails when this differs from the server's (src/admin-roles/rules.ts).
 */
export const CLIENT_GRANTS: Readonly<Record<string, readonly Permission[] | 'admin'>> = {
  admin: 'admin',
  scim: ['users:write', 'users:credentials', 'users:enable'],
  introspect: ['users:read'],
};

/** The built-in clients whose tokens reach the admin API: only an admin changes them. */
export const ADMIN_CLIENTS: readonly string[] = ['admin-cli', 'admin-console'];
