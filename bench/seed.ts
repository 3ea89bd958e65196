import { cookieHeader } from './http.ts';
import { createUsers } from './admin-api.ts';
import { createClient, type CreatedClient, type Latchkey } from './latchkey.ts';
import { browserSignIn, passwordGrant, type WebClient } from './oauth-client.ts';

export interface BenchUser {
  username: string;
  password: string;
  email: string;
  displayName: string;
}

export interface Seed {
  /** Database-backend users, one per connection, all with the same password (each its own salt). */
  users: BenchUser[];
  /** client_credentials only: the client_credentials and introspection paths (and oidc-provider's client). */
  service: CreatedClient;
  /** password grant only, as a first-party app or script: the password grant; the /me and userinfo token. */
  passwordApp: CreatedClient;
  /** A web application: code flow and refresh tokens. */
  web: WebClient;
  /** An access token of the first user, scope openid profile email, for /me and userinfo. */
  userAccessToken: string;
}

export const SCOPES = ['openid', 'profile', 'email'];

export const USER_PASSWORD = 'bench-user-password-1';

/**
 * What the runs need, made through the real interfaces: the clients with the operator CLI (`npm run
 * latchkey -- client create`), the users (one per connection) with the GraphQL admin API, the
 * tokens at the token endpoint.
 */
export async function seed(server: Latchkey, userCount: number): Promise<Seed> {
  const users: BenchUser[] = Array.from({ length: userCount }, (_, i) => {
    const n = String(i).padStart(2, '0');
    return { username: `bench-user-${n}`, password: USER_PASSWORD, email: `bench-user-${n}@example.org`, displayName: `Bench User ${n}` };
  });
  await createUsers(server, users);
  const service = await createClient(server, 'bench-service', { grants: ['client_credentials'] });
  const passwordApp = await createClient(server, 'bench-password', { grants: ['password'], scopes: SCOPES });
  // Nothing listens at the redirect URI: the bench reads the code from the Location header.
  const redirectUri = 'http://127.0.0.1:9/callback';
  const webClient = await createClient(server, 'bench-web', {
    grants: ['authorization_code', 'refresh_token'],
    scopes: SCOPES,
    redirectUris: [redirectUri],
  });
  const web: WebClient = { ...webClient, redirectUri, scope: SCOPES.join(' ') };
  const { access_token } = await passwordGrant(server.url, passwordApp, users[0]!.username, USER_PASSWORD, SCOPES.join(' '));
  return { users, service, passwordApp, web, userAccessToken: access_token };
}

/** One browser per user, signed in on the login page: their Cookie headers, each one SSO session. */
export async function signedInBrowsers(server: Latchkey, s: Seed): Promise<string[]> {
  const cookies: string[] = [];
  // One after the other: each sign-in verifies a password (argon2); a burst is not what is measured.
  for (const user of s.users) cookies.push(cookieHeader(await browserSignIn(server.url, s.web, user.username, user.password)));
  return cookies;
}
