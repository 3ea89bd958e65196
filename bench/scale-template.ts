import { adminToken, graphql } from './admin-api.ts';
import { createClient, type Latchkey } from './latchkey.ts';
import { clientCredentialsGrant, passwordGrant } from './oauth-client.ts';
import { SCOPES } from './seed.ts';

/** The rows the fill copies (bench/scale-fill.ts), each one the server wrote itself. */
export interface Templates {
  clientId: string;
  userId: string;
}

const TEMPLATE_USER = { username: 'scale-template', password: 'scale-template-password-1' };

/**
 * One of each row the fill multiplies, made through the real interfaces: a client with every grant
 * the filled tokens come from (the operator CLI), a user (the GraphQL admin API, which also writes the
 * audit events of an admin change), the user's access and refresh tokens (the password grant) and a
 * client's own token (`client_credentials`). Copying these rows, not writing rows of our own, keeps the
 * fill in the shapes the server writes, whatever columns later migrations add.
 */
export async function makeTemplates(server: Latchkey): Promise<Templates> {
  const client = await createClient(server, 'scale-template', {
    grants: ['client_credentials', 'password', 'refresh_token', 'authorization_code'],
    scopes: SCOPES,
    redirectUris: ['https://app.example.com/callback'],
  });
  const token = await adminToken(server);
  const { createUser } = await graphql<{ createUser: { id: string } }>(
    server,
    token,
    'mutation($input: CreateUserInput!) { createUser(input: $input) { id } }',
    { input: { ...TEMPLATE_USER, email: 'scale-template@example.com', displayName: 'Scale Template' } },
  );
  const tokens = await passwordGrant(server.url, client, TEMPLATE_USER.username, TEMPLATE_USER.password, SCOPES.join(' '));
  if (!tokens.refresh_token) throw new Error('the template password grant gave no refresh token');
  await clientCredentialsGrant(server.url, client);
  return { clientId: client.clientId, userId: createUser.id };
}
