/**
 * The SCIM 2.0 service provider's services (docs/scim-provisioning.md "What the endpoint supports"):
 * Users, Groups and the discovery resources, over one backend of plugin `scim` per caller.
 */
import type { Config } from '../config/schema.ts';
import { scimDiscovery } from './discovery.ts';
import { invitationSender } from './invitations.ts';
import type { Projection } from './documents.ts';
import type { ScimCaller, ScimListPage, ScimListRequest } from './model.ts';
import { scimGroups } from './groups.ts';
import type { ScimServiceDeps } from './deps.ts';
import { scimUsers } from './users.ts';

export const SCIM_PATH = '/scim/v2';

export function scimService(config: Config, deps: Omit<ScimServiceDeps, 'base' | 'invitations'>) {
  const invitations = invitationSender({ queries: deps.queries, invite: deps.invite, logger: deps.logger });
  const full = { ...deps, invitations, base: `${config.publicUrl}${SCIM_PATH}` };
  const scimBackends = config.identity.backends.filter((b) => b.plugin === 'scim').map((b) => b.id);
  const users = scimUsers(full);
  const groups = scimGroups(full);
  return {
    users,
    groups,
    /**
     * `POST /.search` (RFC 7644 §3.4.3): users, then groups, that match; a filter's attribute that a
     * resource type lacks matches none of its resources. Paged like a list: the users' page, and the
     * groups' from where the users end, each read within the bounds of its own list.
     */
    async search(caller: ScimCaller, req: ScimListRequest & Projection): Promise<ScimListPage> {
      const fromUsers = await users.list(caller, req);
      // The rest of the page from the groups: from the first when the page starts among the users.
      const fromGroups = await groups.list(caller, {
        ...req,
        startIndex: Math.max(1, req.startIndex - fromUsers.totalResults),
        count: Math.max(0, req.count - fromUsers.resources.length),
      });
      return {
        totalResults: fromUsers.totalResults + fromGroups.totalResults,
        startIndex: req.startIndex,
        resources: [...fromUsers.resources, ...fromGroups.resources],
      };
    },
    discovery: scimDiscovery(full.base),
    /** The durable queue of invitations: started with the server, stopped before the database closes. */
    invitations,
    /**
     * The backend a client with the role `scim` writes: the first backend of plugin `scim` in the
     * configuration (docs/scim-provisioning.md "What the endpoint supports"); undefined when there is none.
     */
    clientBackend: (): string | undefined => scimBackends[0],
  };
}

export type ScimService = ReturnType<typeof scimService>;
