import type { Resolvers } from '../generated/graphql.ts';

export const auditResolvers: Resolvers = {
  Query: {
    auditEvents: async (_p, { first, after, kind, userId, clientId }, { app }) => {
      const page = await app.audit.page({ first, after, kind, userId, clientId });
      return { ...page, edges: page.edges.map((e) => ({ ...e, node: { ...e.node, at: new Date(e.node.at).toISOString() } })) };
    },
    identityBackends: async (_p, _a, { app }) => {
      const health = await app.identity.health();
      return app.identity.members.map((m, order) => ({ id: m.id, plugin: m.plugin, order, up: health[m.id] === 'up' }));
    },
  },
};
