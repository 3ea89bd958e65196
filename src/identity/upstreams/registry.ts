import type { Logger } from 'pino';
import { describeIssues } from '../../config/issues.ts';
import type { UpstreamEntry } from '../../config/schema.ts';
import { addressRules, type AddressRules } from '../../outbound/address-rules.ts';
import { PluginLoadError } from '../loader.ts';
import type { Upstream, UpstreamPlugin } from './contract.ts';
import oidcUpstream from './oidc.ts';

/** The kinds of upstream; a SAML or plain OAuth 2.0 kind is one more factory here. */
const kinds: Record<string, UpstreamPlugin> = { oidc: oidcUpstream };

/** Where an upstream's callback is: `PUBLIC_URL/login/upstream/<id>/callback`. */
export const upstreamCallbackPath = (id: string): string => `/login/upstream/${encodeURIComponent(id)}/callback`;

/**
 * Builds the configured upstreams, validating each entry with its kind's schema: a bad entry stops the
 * server at start with a message naming the upstream and the key. Nothing is fetched here: an
 * upstream down at start does not stop Latchkey (each reads its metadata on first use).
 */
export function loadUpstreams(entries: UpstreamEntry[], publicUrl: string, logger: Logger, outbound: AddressRules = addressRules()) {
  const upstreams: Upstream[] = entries.map((entry) => {
    const where = `identity upstream "${entry.id}" (kind "${entry.kind}")`;
    const plugin = kinds[entry.kind];
    if (!plugin) throw new PluginLoadError(`${where}: unknown kind; known kinds: ${Object.keys(kinds).join(', ')}`);
    const parsed = plugin.configSchema.safeParse(entry);
    if (!parsed.success) {
      const issues = describeIssues(parsed.error.issues, entry, '', 'the upstream entry').join('; ');
      throw new PluginLoadError(`${where}: invalid config: ${issues}`);
    }
    return plugin.create(parsed.data, {
      logger: logger.child({ upstream: entry.id }),
      callbackUrl: publicUrl + upstreamCallbackPath(entry.id),
      outbound,
    });
  });
  return {
    list: upstreams,
    find: (id: string | undefined): Upstream | undefined => upstreams.find((u) => u.id === id),
    close: () => {
      for (const u of upstreams) u.close?.();
    },
  };
}

export type Upstreams = ReturnType<typeof loadUpstreams>;
