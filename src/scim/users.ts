/**
 * SCIM Users (RFC 7644 §3.3–3.6): the users of one backend of plugin `scim`, kept as Latchkey user
 * records (docs/scim-provisioning.md "What the endpoint supports"). Every write is one transaction
 * with its `admin.change` event naming the SCIM token or client; `active: false` and DELETE
 * deprovision the user exactly as a directory leaver (docs/directory-sync.md).
 */
import type { ScimServiceDeps } from './deps.ts';
import { scimUserCreate } from './user-create.ts';
import { scimUserDelete } from './user-delete.ts';
import { scimUserReads } from './user-reads.ts';
import { scimUserUpdate } from './user-update.ts';

export function scimUsers(deps: ScimServiceDeps) {
  return {
    ...scimUserReads(deps),
    create: scimUserCreate(deps),
    ...scimUserUpdate(deps),
    remove: scimUserDelete(deps),
  };
}

export type ScimUsers = ReturnType<typeof scimUsers>;
