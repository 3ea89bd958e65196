import type { Resolvers } from '../generated/graphql.ts';

export const auditResolvers: Resolvers = {
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
