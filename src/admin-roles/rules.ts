/**
 * The rules of admin roles (docs/admin-api.md "Roles and permissions"), as pure functions of a
 * caller's grant: what a set of roles holds, and "nobody grants a role or permission they lack".
 * The admin API's one check (src/admin/permissions.ts) and the services that give roles use them.
 */
import { ForbiddenError } from '../errors/service.ts';
import { ADMIN_ROLE, PERMISSIONS, type AdminGrant, type Permission } from './model.ts';

/** The grant of `roles` under `catalogue` (every role's permissions). */
export function grantOf(
  userId: string | null,
  roles: readonly string[],
  catalogue: ReadonlyMap<string, readonly Permission[]>,
): AdminGrant {
  const held = [...new Set(roles)].filter((r) => catalogue.has(r));
  // The admin role gives every permission: named first, it is the role an admin's acts are recorded under.
  const ordered = held.includes(ADMIN_ROLE) ? [ADMIN_ROLE, ...held.filter((r) => r !== ADMIN_ROLE)] : held;
  const sources = new Map<Permission, string>();
  for (const role of ordered) for (const p of catalogue.get(role)!) if (!sources.has(p)) sources.set(p, role);
  return { userId, roles: ordered, sources, catalogue };
}

/** The permissions held, in the fixed list's order. */
export const permissionsOf = (grant: AdminGrant): Permission[] => PERMISSIONS.filter((p) => grant.sources.has(p));

/** Of `wanted`, those the caller lacks. */
export const lacking = (grant: AdminGrant, wanted: Iterable<Permission>): Permission[] =>
  [...new Set(wanted)].filter((p) => !grant.sources.has(p));

/** The permissions `roles` would give, under the caller's catalogue. */
export const permissionsOfRoles = (grant: AdminGrant, roles: readonly string[]): Set<Permission> =>
  new Set(roles.flatMap((r) => grant.catalogue.get(r) ?? []));

const isAdmin = (grant: AdminGrant) => grant.roles.includes(ADMIN_ROLE);

const list = (ps: readonly string[]) => ps.join(', ');

/**
 * A change to someone's roles: every role given or taken must be one whose permissions the caller
 * holds all of, and the admin role only by an admin. Roles no one defines give nothing, so they pass.
 */
export function checkRolesChange(grant: AdminGrant, before: readonly string[], after: readonly string[]): void {
  const was = new Set(before);
  const now = new Set(after);
  const changed = [...now].filter((r) => !was.has(r)).concat([...was].filter((r) => !now.has(r)));
  for (const role of changed) {
    if (role === ADMIN_ROLE && !isAdmin(grant)) throw new ForbiddenError('only an admin may give or take the admin role');
    const missing = lacking(grant, grant.catalogue.get(role) ?? []);
    if (missing.length > 0) {
      throw new ForbiddenError(`giving or taking the role ${role} needs every permission it gives; you lack ${list(missing)}`, missing[0]);
    }
  }
}

/**
 * Making, changing or deleting a custom role: the caller must hold every permission it gives,
 * before and after (nobody makes a role stronger than themselves, nor touches one).
 */
export function checkRoleDefinition(grant: AdminGrant, name: string, permissions: readonly Permission[]): void {
  const missing = lacking(grant, permissions);
  if (missing.length > 0) {
    throw new ForbiddenError(`the role ${name} would give permissions you lack: ${list(missing)}`, missing[0]);
  }
}

/**
 * What a client's own roles and scopes give (src/clients/roles.ts, src/clients/scopes.ts): the
 * `admin` role and the `admin` scope make an admin client, so only an admin adds or removes them;
 * `scim` provisions users (`users:write`); `introspect` reads every token's user (`users:read`).
 */
const CLIENT_GRANTS: Record<string, Permission | typeof ADMIN_ROLE> = { admin: ADMIN_ROLE, scim: 'users:write', introspect: 'users:read' };

export function checkClientRights(
  grant: AdminGrant,
  before: { roles: readonly string[]; scopes: readonly string[] } | undefined,
  after: { roles: readonly string[]; scopes: readonly string[] },
): void {
  const changed = (a: readonly string[], b: readonly string[]) => a.filter((x) => !b.includes(x)).concat(b.filter((x) => !a.includes(x)));
  const roles = changed(before?.roles ?? [], after.roles);
  const scopes = changed(before?.scopes ?? [], after.scopes);
  if (scopes.includes('admin') && !isAdmin(grant)) throw new ForbiddenError("only an admin may give or take a client's admin scope");
  for (const role of roles) {
    const needs = CLIENT_GRANTS[role];
    if (needs === ADMIN_ROLE && !isAdmin(grant)) throw new ForbiddenError("only an admin may give or take a client's admin role");
    if (needs && needs !== ADMIN_ROLE && !grant.sources.has(needs)) {
      throw new ForbiddenError(`giving or taking a client's ${role} role needs the permission ${needs}`, needs);
    }
  }
}
