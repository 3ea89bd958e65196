import { GraphQLError } from 'graphql';
import { toUser } from '../../users/queries.ts';
import { notFound } from '../errors.ts';
import type { Resolvers } from '../generated/graphql.ts';
import { paginate } from '../pagination.ts';

export const userResolvers: Resolvers = {
  Query: {
    users: (_p, { first, after, search }, { app }) =>
      paginate(app.userQueries.listQuery(search), { first, after, timeColumn: 'created_at', keyColumn: 'id', direction: 'asc' }, toUser),
    user: async (_p, { id }, { app }) => (await app.userQueries.find(id)) ?? null,
  },

  Mutation: {
    createUser: (_p, { input }, ctx) =>
      ctx.change('user.create', {}, (tx) =>
        tx.users.create({ ...input, roles: input.roles ?? undefined, email: input.email ?? null, displayName: input.displayName ?? null }),
      ),

    updateUser: (_p, { id, input }, ctx) =>
      ctx.change('user.update', { userId: id }, async (tx) => {
        const user = await tx.users.update(id, input);
        if (!user) throw notFound('id', `no user ${id}`);
        // A disabled user's tokens stop working now, not when they expire.
        if (user.disabled) await tx.tokens.revoke({ user_id: id });
        return user;
      }),

    setUserPassword: (_p, { id, password }, ctx) =>
      ctx.change('user.set_password', { userId: id }, async (tx) => {
        if (!(await tx.users.setPassword(id, password))) throw notFound('id', `no user ${id}`);
        await tx.tokens.revoke({ user_id: id });
        return true;
      }),

    deleteUser: (_p, { id }, ctx) => ctx.change('user.delete', { userId: id }, (tx) => tx.users.remove(id)),

    revokeTokens: (_p, { userId, clientId }, ctx) => {
      const where: Record<string, string> = {};
      if (userId) where.user_id = userId;
      if (clientId) where.client_id = clientId;
      if (!userId && !clientId) {
        throw new GraphQLError('userId or clientId: give at least one', { extensions: { code: 'BAD_USER_INPUT', field: 'userId' } });
      }
      return ctx.change('tokens.revoke', { userId, clientId }, async (tx) => {
        const n = await tx.tokens.revoke(where);
        await tx.audit.record({ kind: 'token.revoked', userId, clientId, actorUserId: ctx.admin.userId, actorClientId: ctx.admin.clientId, ip: ctx.ip, requestId: ctx.requestId, details: { count: n } });
        return n;
      });
    },
  },

  User: {
    readOnly: (u, _a, { app }) => u.backend !== app.users.localBackend,
    createdAt: (u) => new Date(u.createdAt).toISOString(),
  },
};
