import type { ServiceProviderInput } from '../../saml/service-providers.ts';
import { SAML_PATHS } from '../../saml/idp.ts';
import { ENUM_VALUES } from '../enum-values.ts';
import type { Resolvers } from '../generated/graphql.ts';

const iso = (ms: number) => new Date(ms).toISOString();

/** SAML service providers (docs/saml-applications.md): every rule and audit event is the service's; the resolvers only translate. */
export const samlResolvers: Resolvers = {
  Query: {
    samlServiceProviders: (_p, _a, { app }) => app.samlProviders.list(),
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
      app.samlProviders.register(metadataXml, (input ?? {}) as ServiceProviderInput, actor),
    updateSamlServiceProvider: (_p, { entityId, input }, { app, actor }) =>
      app.samlProviders.update(entityId, input as ServiceProviderInput, actor),
    deleteSamlServiceProvider: (_p, { entityId }, { app, actor }) => app.samlProviders.remove(entityId, actor),
  },

  SamlServiceProvider: {
    createdAt: (sp) => iso(sp.createdAt),
    updatedAt: (sp) => iso(sp.updatedAt),
  },

  SamlNameIdFormat: ENUM_VALUES.SamlNameIdFormat,
};
