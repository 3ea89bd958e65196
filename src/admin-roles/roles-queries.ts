import type { Database } from '../db/database.ts';
import { json, num } from '../db/rows.ts';
import { isPermission, type AdminRole } from './model.ts';

type Row = Record<string, unknown>;

/** A stored custom role; a permission this version does not know (a newer one wrote it) grants nothing. */
const toRole = (r: Row): AdminRole => ({
  name: String(r.name),
  description: String(r.description ?? ''),
  permissions: json<string[]>(r.permissions, []).filter(isPermission),
  builtIn: false,
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

/** The custom admin roles (table `admin_roles`): a handful, read whole. */
export const adminRoleQueries = ({ knex: db }: Database) => ({
  async list(): Promise<AdminRole[]> {
    return (await db('admin_roles').select('*').orderBy('name')).map(toRole);
  },

  async find(name: string): Promise<AdminRole | undefined> {
    const row = await db('admin_roles').where({ name }).first();
    return row ? toRole(row) : undefined;
  },

  async insert(role: AdminRole): Promise<void> {
    await db('admin_roles').insert({
      name: role.name,
      description: role.description,
      permissions: JSON.stringify(role.permissions),
      created_at: role.createdAt,
      updated_at: role.updatedAt,
    });
  },

  async update(role: AdminRole): Promise<void> {
    await db('admin_roles')
      .where({ name: role.name })
      .update({ description: role.description, permissions: JSON.stringify(role.permissions), updated_at: role.updatedAt });
  },

  async remove(name: string): Promise<boolean> {
    return (await db('admin_roles').where({ name }).delete()) > 0;
  },
});

export type AdminRoleQueries = ReturnType<typeof adminRoleQueries>;
