import type { ServiceProviderInput } from '../../saml/service-providers.ts';
import { SAML_PATHS } from '../../saml/idp.ts';
import { ENUM_VALUES } from '../enum-values.ts';
import { samlLaunchUrl } from '../../access/launch.ts';
import type { Resolvers } from '../generated/graphql.ts';

const iso = (ms: number) => new Date(ms).toISOString();

/** GraphQL's `roles` of an SP is the service's `appRoles`; the rest as it is. */
function withAppRoles(input: { roles?: unknown }): ServiceProviderInput {
  const { roles, ...rest } = input;
  return (roles === undefined ? rest : { ...rest, appRoles: roles }) as ServiceProviderInput;
}

/** SAML service providers (docs/saml-applications.md): every rule and audit event is the service's; the resolvers only translate. */
export const samlResolvers: Resolvers = {
  Query: {
    // An owner without apps:read gets theirs only (`ownedBy`, set by the permission check).
    samlServiceProviders: (_p, _a, { app, ownedBy }) => app.samlProviders.list(ownedBy),
    samlServiceProvider: async (_p, { entityId }, { app }) => (await app.samlProviders.find(entityId)) ?? null,
    samlIdentityProvider: async (_p, _a, { app }) => {
      const base = app.config.publicUrl.replace(/\/$/, '');
      return {
        entityId: app.saml.issuer,
        metadataUrl: `${base}${SAML_PATHS.metadata}`,
        singleSignOnUrl: `${base}${SAML_PATHS.sso}`,
        singleLogoutUrl: `${base}${SAML_PATHS.slo}`,
        signingCertificate: await app.saml.signingCertificate(),
      };
    },
  },

  Mutation: {
    registerSamlServiceProvider: (_p, { metadataXml, input }, { app, actor }) =>
      app.samlProviders.register(metadataXml, withAppRoles(input ?? {}), actor),
    updateSamlServiceProvider: (_p, { entityId, input }, { app, actor }) => app.samlProviders.update(entityId, withAppRoles(input), actor),
    deleteSamlServiceProvider: (_p, { entityId }, { app, actor }) => app.samlProviders.remove(entityId, actor),
  },

  SamlServiceProvider: {
    createdAt: (sp) => iso(sp.createdAt),
    updatedAt: (sp) => iso(sp.updatedAt),
    roles: (sp) => sp.appRoles,
    rolesAttribute: (sp) => sp.rolesAttribute ?? 'roles',
    launchUrl: (sp, _a, { app }) => samlLaunchUrl(sp, app.config.publicUrl),
  },

  SamlNameIdFormat: ENUM_VALUES.SamlNameIdFormat,
};
