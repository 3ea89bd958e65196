/** The document's paths first, then MaxKey's `/sign/...` aliases (docs/endpoints.md): same handlers. */
export const paths = {
  authorize: ['/oauth/v20/authorize', '/sign/authz/oauth/v20/authorize'],
  token: ['/oauth/v20/token', '/sign/authz/oauth/v20/token'],
  me: ['/api/oauth/v20/me', '/sign/api/oauth/v20/me'],
  userinfo: ['/connect/v10/userinfo', '/sign/api/connect/v10/userinfo'],
  jwks: '/connect/v10/jwks',
  introspect: '/oauth/v20/introspect',
  revoke: '/oauth/v20/revoke',
  logout: '/connect/v10/logout',
  /** RFC 8628: where a device asks for codes, and the page where the user enters one. */
  deviceAuthorization: '/oauth/v20/device_authorization',
  device: '/device',
} as const;
