import { InputError } from '../errors/service.ts';

/**
 * The roles a client may hold, and what each grants: the only names anything checks (the admin API
 * in src/admin/auth.ts, introspection and revocation in src/oauth/). Any other name would be stored
 * and grant nothing, so `introspection` for `introspect` would fail silently: it is refused instead.
 */
export const CLIENT_ROLES = {
  /** A service account of the admin API (client_credentials); may also introspect and revoke every token. */
  admin: 'admin',
  /** A resource server: may introspect every client's tokens, and nothing else. */
  introspect: 'introspect',
  /**
   * A SCIM client (client_credentials): may call `/scim/v2` for the first backend of plugin `scim`
   * (docs/scim-provisioning.md "What the endpoint supports").
   */
  scim: 'scim',
} as const;

export type ClientRole = (typeof CLIENT_ROLES)[keyof typeof CLIENT_ROLES];

const KNOWN: readonly string[] = Object.values(CLIENT_ROLES);

/** Every role is one Latchkey knows; the refusal names the unknown one and the known ones. */
export function checkRoles(roles: readonly string[]): void {
  for (const role of roles) {
    if (!KNOWN.includes(role)) {
      const named = role.length > 64 ? `${role.slice(0, 64)}…` : role;
      throw new InputError(
        'roles',
        `${JSON.stringify(named)} is not a client role; the roles are ${KNOWN.slice(0, -1).join(', ')} and ${KNOWN.at(-1)}`,
      );
    }
  }
}
