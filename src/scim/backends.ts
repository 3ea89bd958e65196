import scimPlugin from '../../plugins/scim/index.ts';
import { describeIssues } from '../config/issues.ts';
import type { Config } from '../config/schema.ts';
import { PluginLoadError } from '../identity/loader.ts';
import type { User } from '../users/model.ts';
import type { UserQueries } from '../users/queries.ts';
import type { ScimQueries } from './scim-queries.ts';

/** The plugin name of a SCIM backend in `identity.backends[].plugin`. */
export const SCIM_PLUGIN = 'scim';

/** A configured `plugin: scim` backend (docs/scim-provisioning.md "Setting up a SCIM backend"). */
export interface ScimBackend {
  id: string;
  /** Mail a link to set a password to a user the client creates active, with an email and no password. */
  invite: boolean;
  /** The upstream whose users sign in as this backend's user of the same userName. */
  linkUpstream?: string;
}

/**
 * The SCIM backends of `config`, checked at start: their keys (the plugin's strict schema: an unknown key
 * is refused, naming it, docs/decisions.md "Unknown configuration keys"), a `linkUpstream` that names a
 * configured upstream, and a mail server for `invite: true` (an invitation that can never be mailed is a
 * configuration error, not a runtime one). A fault stops the start with a message naming the backend.
 */
export function scimBackends(config: Pick<Config, 'identity' | 'smtp'>): ScimBackend[] {
  const upstreams = config.identity.upstreams.map((u) => u.id);
  return config.identity.backends
    .filter((entry) => entry.plugin === SCIM_PLUGIN)
    .map((entry) => {
      const where = `identity backend "${entry.id}" (plugin "${SCIM_PLUGIN}")`;
      const parsed = scimPlugin.configSchema.safeParse(entry.config ?? {});
      if (!parsed.success) {
        throw new PluginLoadError(`${where}: invalid config: ${describeIssues(parsed.error.issues, entry.config, 'config').join('; ')}`);
      }
      const { invite, linkUpstream } = parsed.data;
      if (linkUpstream !== undefined && !upstreams.includes(linkUpstream)) {
        const known = upstreams.length > 0 ? `the upstreams are: ${upstreams.join(', ')}` : 'no upstream is configured';
        throw new PluginLoadError(
          `${where}: invalid config: config.linkUpstream: ${JSON.stringify(linkUpstream)} is not in identity.upstreams (${known})`,
        );
      }
      if (invite && !(config.smtp.url && config.smtp.from)) {
        throw new PluginLoadError(
          `${where}: invalid config: config.invite: invitations are mailed, so smtp.url and smtp.from are required when invite is true`,
        );
      }
      return { id: entry.id, invite, ...(linkUpstream !== undefined ? { linkUpstream } : {}) };
    });
}

/**
 * The SCIM user an upstream's sign-in is linked to (docs/scim-provisioning.md "How SCIM users sign
 * in"): in a backend whose `linkUpstream` names the upstream, the user whose userName is the upstream's
 * username (its username claim; an upstream that sends none gives its verified email there, see
 * src/identity/upstreams/oidc.ts), compared without case, as userNames are unique. The first such
 * backend holding the name decides; undefined when none links the upstream or holds the name. The
 * record is returned as it is, disabled or not, and so is one SCIM retired under the name (a DELETE:
 * `<userName>~<id>`, disabled): the caller refuses both, so a person the client removed never comes
 * back as an ordinary upstream user.
 */
export function upstreamLinks(
  backends: readonly ScimBackend[],
  users: Pick<UserQueries, 'findByUsername' | 'find'>,
  scim: Pick<ScimQueries, 'retiredUser'>,
) {
  return async (upstreamId: string, claimed: { username: string }): Promise<User | undefined> => {
    const name = claimed.username.trim();
    if (!name) return undefined;
    for (const backend of backends) {
      if (backend.linkUpstream !== upstreamId) continue;
      const user = await users.findByUsername(backend.id, name);
      if (user) return user;
      const retired = await scim.retiredUser(backend.id, name);
      if (retired) return users.find(retired);
    }
    return undefined;
  };
}

export type UpstreamLinks = ReturnType<typeof upstreamLinks>;
