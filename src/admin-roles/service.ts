import type { Actor, AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { Transaction } from '../db/transaction.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import { BUILT_IN_NAMES, BUILT_IN_ROLES, isPermission, PERMISSIONS, type AdminGrant, type AdminRole, type Permission } from './model.ts';
import type { AdminRoleQueries } from './roles-queries.ts';
import { checkRoleDefinition, grantOf } from './rules.ts';

/** A role's name: as a user's roles take it (src/users/service.ts), without `:` so it is never read as a permission. */
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const DESCRIPTION_MAX = 500;

function checkName(name: string): string {
  if (!NAME.test(name)) throw new InputError('name', 'must be 1 to 64 of A-Z a-z 0-9 _ . -');
  if (BUILT_IN_NAMES.has(name)) throw new InputError('name', `${name} is a built-in role`);
  return name;
}

function checkPermissions(permissions: readonly string[]): Permission[] {
  const unknown = permissions.find((p) => !isPermission(p));
  if (unknown !== undefined) {
    throw new InputError(
      'permissions',
      `${JSON.stringify(unknown.slice(0, 64))} is not a permission; the permissions are ${PERMISSIONS.join(', ')}`,
    );
  }
  if (permissions.length === 0) throw new InputError('permissions', 'a role gives at least one permission');
  // In the fixed list's order, each once: a role reads the same however it was typed.
  return PERMISSIONS.filter((p) => permissions.includes(p));
}

function checkDescription(raw: string | null | undefined): string {
  const description = raw?.trim() ?? '';
  if (description.length > DESCRIPTION_MAX || /[\x00-\x1f\x7f]/.test(description)) {
    throw new InputError('description', `must be at most ${DESCRIPTION_MAX} characters, no control characters`);
  }
  return description;
}

interface RoleTransaction {
  queries: { adminRoles: AdminRoleQueries };
  audit: Pick<AuditLog, 'change'>;
}

/** The caller's grant, which every change here is judged by; the CLI and the server itself hold every permission. */
const grantOfActor = (actor: Actor): AdminGrant | undefined => actor.grant;

/**
 * Admin roles (docs/admin-api.md "Roles and permissions"): the built-in ones, the custom ones an
 * administrator makes from the fixed list of permissions, and a caller's grant. Every change is one
 * transaction with its audit event, and nobody makes, changes or deletes a role that gives a
 * permission they lack.
 */
export const adminRoleService = (queries: AdminRoleQueries, deps: { transaction: Transaction<RoleTransaction> }) => {
  /** Every role's permissions now, built-in ones first. */
  async function catalogue(): Promise<Map<string, readonly Permission[]>> {
    const roles = new Map<string, readonly Permission[]>(BUILT_IN_ROLES.map((r) => [r.name, r.permissions]));
    for (const r of await queries.list()) if (!roles.has(r.name)) roles.set(r.name, r.permissions);
    return roles;
  }

  return {
    /** Every role, the built-in ones first, then the custom ones by name. */
    async list(): Promise<AdminRole[]> {
      return [...BUILT_IN_ROLES, ...(await queries.list()).filter((r) => !BUILT_IN_NAMES.has(r.name))];
    },

    /** What `roles` hold (a user's record, a client's own roles). */
    async grant(userId: string | null, roles: readonly string[]): Promise<AdminGrant> {
      return grantOf(userId, roles, await catalogue());
    },

    async create(input: { name: string; permissions: readonly string[]; description?: string | null }, actor: Actor): Promise<AdminRole> {
      const name = checkName(input.name);
      const permissions = checkPermissions(input.permissions);
      const grant = grantOfActor(actor);
      if (grant) checkRoleDefinition(grant, name, permissions);
      const now = clock.now();
      const role: AdminRole = {
        name,
        description: checkDescription(input.description),
        permissions,
        builtIn: false,
        createdAt: now,
        updatedAt: now,
      };
      await deps.transaction(async (tx) => {
        if (await tx.queries.adminRoles.find(name)) throw new InputError('name', `a role ${name} exists already`);
        await tx.queries.adminRoles.insert(role);
        await tx.audit.change('admin_role.create', actor, {}, { adminRole: name, permissions });
      });
      return role;
    },

    /** Changes a custom role: fields left out (undefined or null) keep their value. */
    update(name: string, input: { permissions?: readonly string[] | null; description?: string | null }, actor: Actor): Promise<AdminRole> {
      if (BUILT_IN_NAMES.has(name)) throw new InputError('name', `${name} is a built-in role and cannot change`);
      return deps.transaction(async (tx) => {
        const role = await tx.queries.adminRoles.find(name);
        if (!role) throw new NotFoundError('name', `no custom role ${name}`);
        const next: AdminRole = {
          ...role,
          permissions: input.permissions == null ? role.permissions : checkPermissions(input.permissions),
          description: input.description == null ? role.description : checkDescription(input.description),
          updatedAt: clock.now(),
        };
        const grant = grantOfActor(actor);
        if (grant) {
          checkRoleDefinition(grant, name, role.permissions);
          checkRoleDefinition(grant, name, next.permissions);
        }
        await tx.queries.adminRoles.update(next);
        await tx.audit.change('admin_role.update', actor, {}, { adminRole: name, before: role.permissions, permissions: next.permissions });
        return next;
      });
    },

    /**
     * Deletes a custom role. Users and groups that name it keep the name, which then gives nothing
     * (a role made again under that name gives its new permissions to them). False when there was none.
     */
    remove(name: string, actor: Actor): Promise<boolean> {
      if (BUILT_IN_NAMES.has(name)) throw new InputError('name', `${name} is a built-in role and cannot be deleted`);
      return deps.transaction(async (tx) => {
        const role = await tx.queries.adminRoles.find(name);
        if (!role) return false;
        const grant = grantOfActor(actor);
        if (grant) checkRoleDefinition(grant, name, role.permissions);
        await tx.queries.adminRoles.remove(name);
        await tx.audit.change('admin_role.delete', actor, {}, { adminRole: name, permissions: role.permissions });
        return true;
      });
    },
  };
};

export type AdminRoleService = ReturnType<typeof adminRoleService>;
