/**
 * Where the console's server is. The server writes its PUBLIC_URL (the issuer) into the page, so the
 * redirect URI the console sends is exactly the one registered for `admin-console`.
 */
const meta = document.querySelector<HTMLMetaElement>('meta[name="latchkey-issuer"]');
export const issuer = (meta?.content || location.origin).replace(/\/+$/, '');
export const consoleBase = `${issuer}/admin`;

export const CLIENT_ID = 'admin-console';
/** `admin` carries the user's admin role to the admin API; a user without the role gets a token without it. */
export const SCOPE = 'openid profile admin';
export const redirectUri = `${consoleBase}/callback`;
export const signedOutUri = `${consoleBase}/signed-out`;

/** The server's fixed paths (docs/endpoints.md), under the issuer. */
export const endpoints = {
  authorize: `${issuer}/oauth/v20/authorize`,
  token: `${issuer}/oauth/v20/token`,
  logout: `${issuer}/connect/v10/logout`,
  graphql: `${issuer}/graphql`,
};
