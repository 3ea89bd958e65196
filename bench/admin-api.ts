import { json, postForm, request } from './http.ts';
import { ADMIN_PASSWORD, type Latchkey } from './latchkey.ts';
import { TOKEN_PATH } from './oauth-client.ts';

/**
 * The GraphQL admin API (POST /graphql) with an admin token from the built-in `admin-cli` client's
 * password grant, as docs/admin-api.md shows: for seeding many users, where one CLI process per user (about
 * 0.7 s each) would make the quick run much longer.
 */
export async function adminToken(server: Latchkey): Promise<string> {
  const res = await postForm(server.url + TOKEN_PATH, {
    grant_type: 'password',
    client_id: 'admin-cli',
    username: 'admin',
    password: ADMIN_PASSWORD,
  });
  return json<{ access_token: string }>(res, 'admin-cli password grant').access_token;
}

export async function graphql<T>(server: Latchkey, token: string, query: string, variables: Record<string, unknown>): Promise<T> {
  const res = await request(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = json<{ data?: T; errors?: unknown[] }>(res, 'graphql');
  if (body.errors?.length || !body.data) throw new Error(`graphql: ${JSON.stringify(body.errors ?? body)}`);
  return body.data;
}

export async function createUsers(
  server: Latchkey,
  users: Array<{ username: string; password: string; email: string; displayName: string }>,
): Promise<void> {
  const token = await adminToken(server);
  for (const input of users) {
    await graphql(server, token, 'mutation($input: CreateUserInput!) { createUser(input: $input) { id } }', { input });
  }
}
