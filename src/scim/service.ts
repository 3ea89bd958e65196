/**
 * The SCIM 2.0 service provider's services (docs/scim-provisioning.md "What the endpoint supports"):
 * Users, Groups and the discovery resources, over one backend of plugin `scim` per caller.
 */
import type { Config } from '../config/schema.ts';
import { scimDiscovery } from './discovery.ts';
import type { Projection } from './documents.ts';
import type { ScimCaller, ScimListPage, ScimListRequest } from './model.ts';
import { pageOf } from './resources.ts';
import { scimGroups } from './groups.ts';
import type { ScimServiceDeps } from './deps.ts';
import { scimUsers } from './users.ts';

export const SCIM_PATH = '/scim/v2';

export function scimService(config: Config, deps: Omit<ScimServiceDeps, 'base'>) {
  const full = { ...deps, base: `${config.publicUrl}${SCIM_PATH}` };
  const scimBackends = config.identity.backends.filter((b) => b.plugin === 'scim').map((b) => b.id);
  const users = scimUsers(full);
  const groups = scimGroups(full);
  return {
    users,
    groups,
    /**
     * `POST /.search` (RFC 7644 §3.4.3): users, then groups, that match; a filter's attribute that a
     * resource type lacks matches none of its resources.
     */
    async search(caller: ScimCaller, req: ScimListRequest & Projection): Promise<ScimListPage> {
      const all = { ...req, startIndex: 1, count: Number.MAX_SAFE_INTEGER };
      const found = [...(await users.list(caller, all)).resources, ...(await groups.list(caller, all)).resources];
      return pageOf(found, req);
    },
    discovery: scimDiscovery(full.base),
    /**
     * The backend a client with the role `scim` writes: the first backend of plugin `scim` in the
     * configuration (docs/scim-provisioning.md "What the endpoint supports"); undefined when there is none.
     */
    clientBackend: (): string | undefined => scimBackends[0],
  };
}

export type ScimService = ReturnType<typeof scimService>;
