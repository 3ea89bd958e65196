/**
 * The rules of admin roles (docs/admin-api.md "Roles and permissions"), as pure functions of a
 * caller's grant: what a set of roles holds, and "nobody grants a role or permission they lack".
 * The admin API's one check (src/admin/permissions.ts) and the services that give roles use them.
 */
import { ForbiddenError } from '../errors/service.ts';
import { ADMIN_CLIENTS, ADMIN_SCOPE } from '../clients/scopes.ts';
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
 * What a client's own roles and scopes give (src/clients/roles.ts, src/clients/scopes.ts), and so what
 * whoever acts on the client must hold (docs/admin-api.md "Nobody grants what they lack"): the `admin`
 * role and the `admin` scope make an admin client (its client_credentials token, or a user's token
 * through its redirect URIs, reaches the admin API), so only an admin; `scim` provisions users as a
 * SCIM token does (graphql/scim.graphql: create, set passwords, deprovision); `introspect` reads every
 * token's user. The console keeps a copy (console/src/auth/catalogue.ts), checked against this one.
 */
export const CLIENT_GRANTS: Readonly<Record<string, readonly Permission[] | typeof ADMIN_ROLE>> = {
  admin: ADMIN_ROLE,
  scim: ['users:write', 'users:credentials', 'users:enable'],
  introspect: ['users:read'],
};

/** A client as these rules read it: its id (for the built-in admin clients), roles and scopes. */
export interface ClientRights {
  clientId: string;
  roles: readonly string[];
  scopes: readonly string[];
}

/** Each right a client holds now, in words, with what it needs of whoever acts on the client. */
function rightsOf(client: ClientRights): Array<{ what: string; needs: readonly Permission[] | typeof ADMIN_ROLE }> {
  const rights: Array<{ what: string; needs: readonly Permission[] | typeof ADMIN_ROLE }> = [];
  if (ADMIN_CLIENTS.has(client.clientId)) rights.push({ what: 'is a built-in admin client', needs: ADMIN_ROLE });
  if (client.scopes.includes(ADMIN_SCOPE)) rights.push({ what: `has the ${ADMIN_SCOPE} scope`, needs: ADMIN_ROLE });
  for (const role of client.roles) {
    const needs = CLIENT_GRANTS[role];
    if (needs) rights.push({ what: `holds the ${role} role`, needs });
  }
  return rights;
}

/**
 * Whether the client holds a right beyond an application's own (the admin role or scope, `scim`,
 * `introspect`, or it is admin-cli or admin-console): such a client has no owners, since owning it
 * (changing its redirect URIs, rotating its secret) would be holding its rights.
 */
export const holdsRights = (client: ClientRights): boolean => rightsOf(client).length > 0;

/**
 * Acting on a client (changing it, its owners included, rotating its secret, deleting it): the caller
 * must hold what the client gives, judged on what it holds now and not only on what changes, since
 * its secret or its redirect URIs are its rights. `act` words the refusal ("change it").
 */
export function checkClientControl(grant: AdminGrant, client: ClientRights, act: string): void {
  for (const { what, needs } of rightsOf(client)) {
    if (needs === ADMIN_ROLE) {
      if (!isAdmin(grant)) throw new ForbiddenError(`client ${client.clientId} ${what}: only an admin may ${act}`);
      continue;
    }
    const missing = lacking(grant, needs);
    if (missing.length > 0) {
      throw new ForbiddenError(
        `client ${client.clientId} ${what}, which gives ${list(needs)}: to ${act} you need them all; you lack ${list(missing)}`,
        missing[0],
      );
    }
  }
}

/** A change to a client's roles and scopes: each right given or taken needs what it gives (see CLIENT_GRANTS). */
export function checkClientRights(
  grant: AdminGrant,
  before: { roles: readonly string[]; scopes: readonly string[] } | undefined,
  after: { roles: readonly string[]; scopes: readonly string[] },
): void {
  const changed = (a: readonly string[], b: readonly string[]) => a.filter((x) => !b.includes(x)).concat(b.filter((x) => !a.includes(x)));
  const roles = changed(before?.roles ?? [], after.roles);
  const scopes = changed(before?.scopes ?? [], after.scopes);
  if (scopes.includes(ADMIN_SCOPE) && !isAdmin(grant)) throw new ForbiddenError("only an admin may give or take a client's admin scope");
  for (const role of roles) {
    const needs = CLIENT_GRANTS[role];
    if (needs === ADMIN_ROLE && !isAdmin(grant)) throw new ForbiddenError("only an admin may give or take a client's admin role");
    const missing = needs && needs !== ADMIN_ROLE ? lacking(grant, needs) : [];
    if (missing.length > 0) {
      throw new ForbiddenError(
        `giving or taking a client's ${role} role needs the permissions ${list(needs as readonly Permission[])}; you lack ${list(missing)}`,
        missing[0],
      );
    }
  }
}
