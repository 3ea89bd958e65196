import { postForm, type Fields } from './http.ts';
import type { TestServer } from './server.ts';

/** One GraphQL error as the admin API sends it. */
export interface GraphQLErrorBody {
  message: string;
  extensions?: { code?: string; field?: string } & Record<string, unknown>;
}

export interface GraphQLAnswer {
  status: number;
  data?: Record<string, unknown> | null;
  errors?: GraphQLErrorBody[];
}

/**
 * A raw POST to `/graphql` (JSON, as Apollo's CSRF prevention wants), returning the HTTP status with
 * the body as it came, `data` and `errors` both visible: a test can see a refusal that still ran.
 */
export async function graphqlPost(
  server: TestServer,
  token: string | undefined,
  query: string,
  variables?: Record<string, unknown>,
): Promise<GraphQLAnswer> {
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  let body: { data?: Record<string, unknown> | null; errors?: GraphQLErrorBody[] };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new Error(`/graphql answered ${res.status} with a body that is not JSON: ${text.slice(0, 300)}`);
  }
  return { status: res.status, data: body.data, errors: body.errors };
}

export interface TokenAnswer {
  access_token: string;
  refresh_token?: string;
  id_token?: string;
  scope: string;
  error?: string;
  error_description?: string;
}

/** A token request; throws with the server's answer unless it is 200. */
export async function tokenRequest(server: TestServer, fields: Fields, headers: Record<string, string> = {}): Promise<TokenAnswer> {
  const res = await postForm(`${server.url}/oauth/v20/token`, fields, headers);
  const body = (await res.json()) as TokenAnswer;
  if (res.status !== 200) throw new Error(`token request answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

/** The password grant at the built-in public client `admin-cli`, with no `scope` unless given. */
export const adminCliToken = (server: TestServer, username: string, password: string, extra: Fields = {}) =>
  tokenRequest(server, { grant_type: 'password', client_id: 'admin-cli', username, password, ...extra });

/** The scope string of a token answer as a list. */
export const scopesOf = (t: { scope: string }): string[] => t.scope.split(' ').filter(Boolean);
