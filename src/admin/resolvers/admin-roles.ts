import type { AdminRole as Kept } from '../../admin-roles/model.ts';
import { permissionsOf } from '../../admin-roles/rules.ts';
import type { AdminRole, Resolvers } from '../generated/graphql.ts';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const toRole = (r: Kept): AdminRole => ({ ...r, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) });

/**
 * Admin roles (docs/admin-api.md "Roles and permissions"): who is calling, and the roles. Every rule
 * (no escalation) and audit event is the role service's; the resolvers only translate.
 */
export const adminRoleResolvers: Resolvers = {
  Query: {
    viewer: (_p, _a, { admin, grant }) => ({
      userId: admin.userId,
      username: admin.username,
      clientId: admin.clientId,
      roles: grant.roles,
      permissions: permissionsOf(grant),
    }),
    adminRoles: async (_p, _a, { app }) => (await app.adminRoles.list()).map(toRole),
  },
  Mutation: {
    createAdminRole: async (_p, { name, permissions, description }, { app, actor }) =>
      toRole(await app.adminRoles.create({ name, permissions, description }, actor)),
    updateAdminRole: async (_p, { name, permissions, description }, { app, actor }) =>
      toRole(await app.adminRoles.update(name, { permissions, description }, actor)),
    deleteAdminRole: (_p, { name }, { app, actor }) => app.adminRoles.remove(name, actor),
  },
};
