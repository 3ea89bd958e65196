/**
 * The discovery resources (RFC 7644 §4, RFC 7643 §5–7): what this service provider supports, its
 * resource types and its schemas, as a client such as Entra ID or Okta reads them
 * (docs/scim-provisioning.md "What the endpoint supports").
 */
import { scimErrors } from './errors.ts';
import { SCIM_PAGE, SCIM_SCHEMAS, type ScimDocument } from './model.ts';
import { GROUP_SCHEMAS, SCHEMAS, USER_SCHEMAS, type ResourceSchemas } from './schemas.ts';

/** The largest request body the endpoint reads (bytes). */
export const MAX_BODY_BYTES = 1024 * 1024;

export function scimDiscovery(base: string) {
  const resourceType = (rs: ResourceSchemas): ScimDocument => ({
    schemas: [SCIM_SCHEMAS.resourceType],
    id: rs.name,
    name: rs.name,
    endpoint: rs.endpoint,
    description: rs.name === 'User' ? 'User Account' : 'Group',
    schema: rs.core.id,
    schemaExtensions: rs.extensions.map((e) => ({ schema: e.id, required: false })),
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${rs.name}` },
  });

  const schema = (s: (typeof SCHEMAS)[number]): ScimDocument => ({
    schemas: [SCIM_SCHEMAS.schema],
    id: s.id,
    name: s.name,
    description: s.description,
    attributes: s.attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${s.id}` },
  });

  const list = (resources: ScimDocument[]) => ({
    schemas: [SCIM_SCHEMAS.listResponse],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    Resources: resources,
  });

  return {
    serviceProviderConfig(): ScimDocument {
      return {
        schemas: [SCIM_SCHEMAS.serviceProviderConfig],
        patch: { supported: true },
        bulk: { supported: false, maxOperations: 0, maxPayloadSize: MAX_BODY_BYTES },
        filter: { supported: true, maxResults: SCIM_PAGE.max },
        changePassword: { supported: true },
        // Lists come in creation order; sortBy is ignored.
        sort: { supported: false },
        etag: { supported: true },
        authenticationSchemes: [
          {
            type: 'oauthbearertoken',
            name: 'OAuth Bearer Token',
            description: "A SCIM secret token of one backend, or a client_credentials access token of a client with the role 'scim'.",
            specUri: 'https://www.rfc-editor.org/info/rfc6750',
            primary: true,
          },
        ],
        meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
      };
    },

    resourceTypes: () => list([resourceType(USER_SCHEMAS), resourceType(GROUP_SCHEMAS)]),

    resourceType(name: string): ScimDocument {
      const rs = [USER_SCHEMAS, GROUP_SCHEMAS].find((r) => r.name === name);
      if (!rs) throw scimErrors.notFound(`no ResourceType ${name}`);
      return resourceType(rs);
    },

    schemas: () => list(SCHEMAS.map(schema)),

    schema(id: string): ScimDocument {
      const s = SCHEMAS.find((x) => x.id.toLowerCase() === id.toLowerCase());
      if (!s) throw scimErrors.notFound(`no Schema ${id}`);
      return schema(s);
    },
  };
}
