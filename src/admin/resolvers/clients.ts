import type { RegisterClientInput } from '../../clients/service.ts';
import type { Resolvers } from '../generated/graphql.ts';
import { ENUM_VALUES } from '../enum-values.ts';

const iso = (ms: number) => new Date(ms).toISOString();

/** Clients: every rule and audit event is the client service's; the resolvers only translate. */
export const clientResolvers: Resolvers = {
  Query: {
    clients: (_p, { first, after, search }, { app }) => app.clients.page({ first, after, search }),
    client: async (_p, { clientId }, { app }) => (await app.clients.find(clientId)) ?? null,
  },

  Mutation: {
    registerClient: (_p, { input }, { app, actor }) => app.clients.register(input as RegisterClientInput, actor),
    updateClient: (_p, { clientId, input }, { app, actor }) => app.clients.update(clientId, input as never, actor),
    rotateClientSecret: (_p, { clientId }, { app, actor }) => app.clients.rotateSecret(clientId, actor),
    deleteClient: (_p, { clientId }, { app, actor }) => app.clients.remove(clientId, actor),
  },

  Client: {
    createdAt: (c) => iso(c.createdAt),
    updatedAt: (c) => iso(c.updatedAt),
    webOrigins: (c, _a, { app }) => app.clients.webOrigins(c),
  },

  AccessTokenFormat: ENUM_VALUES.AccessTokenFormat,
  ErrorCodes: ENUM_VALUES.ErrorCodes,
  TokenEndpointAuthMethod: ENUM_VALUES.TokenEndpointAuthMethod,
  GrantType: ENUM_VALUES.GrantType,
};
