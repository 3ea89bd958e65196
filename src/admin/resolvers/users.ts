import { NotFoundError } from '../../errors/service.ts';
import { ENUM_VALUES } from '../enum-values.ts';
import type { Resolvers } from '../generated/graphql.ts';

/** Users and their tokens: every rule and audit event is the services'; the resolvers only translate. */
export const userResolvers: Resolvers = {
  // Who disabled a user: an administrator, or a directory sync or SCIM client that found a leaver.
  DisabledBy: ENUM_VALUES.DisabledBy,
  Query: {
    users: (_p, { first, after, search }, { app }) => app.users.page({ first, after, search }),
    user: async (_p, { id }, { app }) => (await app.users.find(id)) ?? null,
  },

  Mutation: {
    createUser: (_p, { input }, { app, actor }) =>
      app.users.create(
        {
          ...input,
          roles: input.roles ?? undefined,
          groups: input.groups ?? undefined,
          attributes: input.attributes ?? undefined,
          email: input.email ?? null,
          displayName: input.displayName ?? null,
        },
        actor,
      ),
    updateUser: (_p, { id, input }, { app, actor }) => app.users.update(id, input, actor),
    setUserPassword: async (_p, { id, password }, { app, actor }) => {
      await app.users.setPassword(id, password, actor);
      return true;
    },
    setUserGroups: (_p, { id, groups }, { app, actor }) => app.users.setGroups(id, groups, actor),
    sendPasswordReset: (_p, { userId }, { app, actor }) => app.passwordReset.sendTo(userId, actor),
    deleteUser: (_p, { id }, { app, actor }) => app.users.remove(id, actor),
    revokeTokens: (_p, { userId, clientId }, { app, actor }) => app.tokens.revokeFor({ userId, clientId }, actor),
    resetUserMfa: async (_p, { id }, { app, actor }) => {
      const user = await app.users.find(id);
      if (!user) throw new NotFoundError('id', `no user ${id}`);
      await app.mfa.reset(id, actor);
      return user;
    },
  },

  User: {
    readOnly: (u, _a, { app }) => u.backend !== app.users.localBackend,
    createdAt: (u) => new Date(u.createdAt).toISOString(),
    mfa: (u, _a, { app }) => app.mfa.status(u.id),
  },
};
