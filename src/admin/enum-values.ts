/**
 * The internal value of each GraphQL enum value, in one place: the resolvers map them at run time
 * and `npm run codegen` (scripts/codegen.ts) types the generated resolvers with them.
 */
export const ENUM_VALUES = {
  AccessTokenFormat: { OPAQUE: 'opaque', JWT: 'jwt' },
  ErrorCodes: { MAXKEY: 'maxkey', RFC6749: 'rfc6749' },
  TokenEndpointAuthMethod: {
    CLIENT_SECRET_BASIC: 'client_secret_basic',
    CLIENT_SECRET_POST: 'client_secret_post',
    CLIENT_SECRET_JWT: 'client_secret_jwt',
    PRIVATE_KEY_JWT: 'private_key_jwt',
    NONE: 'none',
  },
  SigningAlgorithm: { RS256: 'RS256', ES256: 'ES256' },
  SamlNameIdFormat: {
    PERSISTENT: 'persistent',
    EMAIL: 'emailAddress',
    EMAIL_ADDRESS: 'emailAddress',
    UNSPECIFIED: 'unspecified',
    TRANSIENT: 'transient',
  },
  AccessMode: { EVERYONE: 'everyone', ASSIGNED: 'assigned' },
  DisabledBy: { ADMIN: 'admin', DIRECTORY: 'directory' },
  SyncOutcome: { APPLIED: 'applied', REFUSED: 'refused', FAILED: 'failed' },
  WebhookDeliveryStatus: { DELIVERED: 'delivered', FAILED: 'failed', PENDING: 'pending', GIVEN_UP: 'given_up' },
  MappingSource: {
    ATTRIBUTE: 'attribute',
    GROUPS: 'groups',
    ROLES: 'roles',
    STATIC: 'static',
    USERID: 'userid',
    USERNAME: 'username',
    EMAIL: 'email',
  },
  ClaimTarget: { ID_TOKEN: 'id_token', USERINFO: 'userinfo', ACCESS_TOKEN: 'access_token', INTROSPECTION: 'introspection' },
  AttributeNameFormat: { URI: 'uri', BASIC: 'basic', UNSPECIFIED: 'unspecified' },
  GrantType: {
    AUTHORIZATION_CODE: 'authorization_code',
    PASSWORD: 'password',
    REFRESH_TOKEN: 'refresh_token',
    CLIENT_CREDENTIALS: 'client_credentials',
    DEVICE_CODE: 'urn:ietf:params:oauth:grant-type:device_code',
  },
} as const;
