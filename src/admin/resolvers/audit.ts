import { num } from '../../db/rows.ts';
import type { AuditEvent, Resolvers } from '../generated/graphql.ts';
import { paginate } from '../pagination.ts';

const toEvent = (r: Record<string, unknown>): AuditEvent => ({
  id: String(r.id),
  at: new Date(num(r.at)).toISOString(),
  kind: String(r.kind),
  userId: (r.user_id as string | null) ?? null,
  clientId: (r.client_id as string | null) ?? null,
  actorUserId: (r.actor_user_id as string | null) ?? null,
  actorClientId: (r.actor_client_id as string | null) ?? null,
  ip: (r.ip as string | null) ?? null,
  requestId: (r.request_id as string | null) ?? null,
  details: (r.details as string | null) ?? null,
});

export const auditResolvers: Resolvers = {
  Query: {
    auditEvents: (_p, { first, after, kind, userId, clientId }, { app }) => {
      const q = app.db('audit_events').select('*');
      if (kind) q.where('kind', kind);
      if (userId) q.where('user_id', userId);
      if (clientId) q.where('client_id', clientId);
      return paginate(q, { first, after, timeColumn: 'at', keyColumn: 'id', direction: 'desc' }, toEvent);
    },
    identityBackends: async (_p, _a, { app }) => {
      const health = await app.identity.health();
      return app.identity.members.map((m, order) => ({ id: m.id, plugin: m.plugin, order, up: health[m.id] === 'up' }));
    },
  },
};
