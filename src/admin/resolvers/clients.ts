import type { RegisterClientInput } from '../../clients/service.ts';
import type { Resolvers } from '../generated/graphql.ts';
import { ENUM_VALUES } from '../enum-values.ts';
import { launchUrl } from '../../access/launch.ts';

const iso = (ms: number) => new Date(ms).toISOString();

/** GraphQL's `applicationRoles` is the service's `appRoles` (a client's `roles` are its own); the rest as it is. */
function withAppRoles<T extends { applicationRoles?: unknown }>(input: T): Omit<T, 'applicationRoles'> & { appRoles?: unknown } {
  const { applicationRoles, ...rest } = input;
  return applicationRoles === undefined ? rest : { ...rest, appRoles: applicationRoles };
}

/** Clients: every rule and audit event is the client service's; the resolvers only translate. */
export const clientResolvers: Resolvers = {
  Query: {
    // An owner without apps:read gets theirs only (`ownedBy`, set by the permission check).
    clients: (_p, { first, after, search }, { app, ownedBy }) => app.clients.page({ first, after, search, owner: ownedBy }),
    client: async (_p, { clientId }, { app }) => (await app.clients.find(clientId)) ?? null,
  },

  Mutation: {
    registerClient: (_p, { input }, { app, actor }) => app.clients.register(withAppRoles(input) as RegisterClientInput, actor),
    updateClient: (_p, { clientId, input }, { app, actor }) => app.clients.update(clientId, withAppRoles(input) as never, actor),
    rotateClientSecret: (_p, { clientId }, { app, actor }) => app.clients.rotateSecret(clientId, actor),
    deleteClient: (_p, { clientId }, { app, actor }) => app.clients.remove(clientId, actor),
  },

  Client: {
    createdAt: (c) => iso(c.createdAt),
    updatedAt: (c) => iso(c.updatedAt),
    webOrigins: (c, _a, { app }) => app.clients.webOrigins(c),
    applicationRoles: (c) => c.appRoles,
    launchUrl: (c, _a, { app }) => launchUrl(c.initiateLoginUri, app.config.publicUrl),
  },

  AccessTokenFormat: ENUM_VALUES.AccessTokenFormat,
  ErrorCodes: ENUM_VALUES.ErrorCodes,
  TokenEndpointAuthMethod: ENUM_VALUES.TokenEndpointAuthMethod,
  GrantType: ENUM_VALUES.GrantType,
  AccessMode: ENUM_VALUES.AccessMode,
  MappingSource: ENUM_VALUES.MappingSource,
  ClaimTarget: ENUM_VALUES.ClaimTarget,
  AttributeNameFormat: ENUM_VALUES.AttributeNameFormat,
};
