/**
 * What the signed-in admin may do (docs/admin-api.md "Roles and permissions"): the effective
 * permissions the API's `viewer` gives, read after the sign-in and again whenever the API refuses
 * something (a role taken away meanwhile). The console shows a section, a button or a form only to a
 * holder of the permission the API checks for it, so nobody is offered an action that would come back
 * FORBIDDEN. The API stays the judge: this only hides.
 */
import { request } from '../api/graphql.ts';
import { AdminRolesQuery, ViewerQuery } from '../api/generated.ts';
import { store } from '../ui/store.ts';
import { ADMIN_CLIENTS, BUILT_IN_ROLES, CLIENT_GRANTS, type Permission, PERMISSIONS } from './catalogue.ts';

export { type Permission, PERMISSIONS };

export interface Viewer {
  userId: string;
  username: string;
  /** The admin roles that give the permissions (built-in and custom, those of groups included). */
  roles: string[];
  permissions: ReadonlySet<string>;
  /** The permissions of each role known to the console. */
  catalogue: ReadonlyMap<string, readonly string[]>;
}

/** Undefined while it loads; null when the API gives the signed-in user no admin permission at all. */
export const viewer = store<Viewer | null | undefined>(undefined);

let loading: Promise<void> | undefined;

async function read(): Promise<Viewer | null> {
  const { viewer: v } = await request(ViewerQuery, {}, { quiet: true });
  if (v.permissions.length === 0) return null;
  const catalogue = new Map<string, readonly string[]>(Object.entries(BUILT_IN_ROLES));
  if (v.permissions.includes('roles:manage')) {
    const { adminRoles } = await request(AdminRolesQuery, {}, { quiet: true });
    for (const r of adminRoles) catalogue.set(r.name, r.permissions);
  }
  return { userId: v.userId ?? '', username: v.username ?? '', roles: v.roles, permissions: new Set(v.permissions), catalogue };
}

/** Reads who is signed in and what they may do; one read at a time. */
export function loadViewer(): Promise<void> {
  return (loading ??= read()
    .then(
      (v) => viewer.set(v),
      (err: { code?: string }) => {
        // Refused: no admin right (any more). Another failure (the network, a restart) keeps what was
        // known, and before anything was, tries again in a while.
        if (err.code === 'FORBIDDEN') viewer.set(null);
        else if (viewer.get() === undefined) setTimeout(() => void loadViewer(), 5000);
      },
    )
    .finally(() => {
      loading = undefined;
    }));
}

/** The questions a section asks about the signed-in admin. */
export interface Can {
  /** Holds the permission. */
  (permission: Permission): boolean;
  /** Holds one of them. */
  any: (...permissions: Permission[]) => boolean;
  /** May register and delete applications, and name their owners (not an owner's right). */
  manageApps: boolean;
  /** May change this application: every one (apps:write), or one whose owners name them (apps:owned). */
  changeApp: (owners: readonly string[]) => boolean;
  /**
   * May change this client, rotate its secret or delete it, as far as its own rights go: the API lets
   * only a holder of what it gives act on it (an admin for admin-cli, admin-console, the admin role or
   * scope; users:write, users:credentials and users:enable for scim; users:read for introspect).
   */
  holdClient: (client: { clientId: string; roles: readonly string[]; scopes: readonly string[] }) => boolean;
  /** May make and revoke SCIM tokens: a token provisions users, so it takes what that takes besides keys:manage. */
  manageScimTokens: boolean;
  /** May register a webhook (or change where one goes): it receives the audit trail, so audit:read too. */
  registerWebhooks: boolean;
  /**
   * May act on this user at all: the API lets nobody act on a user whose roles give a permission the
   * actor lacks (a helpdesk cannot take over an admin's account).
   */
  actOn: (user: { roles: readonly string[] }) => boolean;
}

export function canOf(v: Viewer | null | undefined): Can {
  const has = (p: Permission) => !!v?.permissions.has(p);
  return Object.assign(has, {
    any: (...ps: Permission[]) => ps.some(has),
    manageApps: has('apps:write'),
    changeApp: (owners: readonly string[]) => has('apps:write') || (has('apps:owned') && !!v && owners.includes(v.userId)),
    holdClient: (client: { clientId: string; roles: readonly string[]; scopes: readonly string[] }) => {
      const admin = !!v?.roles.includes('admin');
      if (ADMIN_CLIENTS.includes(client.clientId) || client.scopes.includes('admin')) return admin;
      return client.roles.every((r) => {
        const needs = CLIENT_GRANTS[r];
        return !needs || (needs === 'admin' ? admin : needs.every(has));
      });
    },
    manageScimTokens: (['keys:manage', 'users:write', 'users:credentials', 'users:enable'] as const).every(has),
    registerWebhooks: has('webhooks:manage') && has('audit:read'),
    actOn: (user: { roles: readonly string[] }) =>
      !!v && user.roles.every((r) => (v.catalogue.get(r) ?? []).every((p) => v.permissions.has(p))),
  });
}

/** The signed-in admin's permissions, re-rendering when they are read again. */
export function useCan(): Can {
  return canOf(viewer.use());
}
