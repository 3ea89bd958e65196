import type { Resolvers } from '../generated/graphql.ts';

/** An admin change's details name the permission it was allowed by and the role that gave it (src/audit/record.ts). */
function detail(details: string | null | undefined, key: 'permission' | 'role'): string | null {
  if (!details) return null;
  try {
    const value = (JSON.parse(details) as Record<string, unknown>)[key];
    return typeof value === 'string' ? value : null;
  } catch {
    return null;
  }
}

export const auditResolvers: Resolvers = {
  AuditEvent: {
    permission: (e) => detail(e.details, 'permission'),
    role: (e) => detail(e.details, 'role'),
  },
  Query: {
    auditEvents: async (_p, { first, after, kind, userId, clientId }, { app }) => {
      const page = await app.audit.page({ first, after, kind, userId, clientId });
      return { ...page, edges: page.edges.map((e) => ({ ...e, node: { ...e.node, at: new Date(e.node.at).toISOString() } })) };
    },
    identityBackends: async (_p, _a, { app }) => {
      const health = await app.identity.health();
      const backends = app.identity.members.map((m, order) => ({
        id: m.id,
        plugin: m.plugin,
        order,
        type: 'backend',
        up: health[m.id] === 'up',
        state: health[m.id] ?? 'down',
      }));
      const upstreams = app.upstreams.list.map((u, order) => ({
        id: u.id,
        plugin: u.kind,
        order,
        type: 'upstream',
        up: u.state() === 'up',
        state: u.state(),
      }));
      return [...backends, ...upstreams];
    },
  },
};
