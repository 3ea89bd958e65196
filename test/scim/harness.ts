import { expect } from '@jest/globals';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import type { DatabaseKind } from '../helpers/databases.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * One server for the SCIM tests of a file (docs/scim-provisioning.md): the database backend first, then
 * one backend of plugin `scim` per id asked for (`hr` by default), an administrator's token, and a SCIM
 * token per backend made through GraphQL, as an administrator connecting Entra ID or Okta would.
 */

export const SCIM_TYPE = 'application/scim+json';
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

const CREATE_TOKEN = `mutation($backend: String!, $description: String) {
  createScimToken(backend: $backend, description: $description) { token scimToken { id } }
}`;
const REVOKE_TOKEN = 'mutation($id: ID!) { revokeScimToken(id: $id) }';

/**
 * A SCIM body as the tests read it: JSON reached into field by field, where a wrong guess fails the
 * expectation that reads it rather than the compiler.
 */
// biome-ignore lint/suspicious/noExplicitAny: answers are checked by the expectations, not by types
export type Json = any;

/** What one SCIM request was and what came back: enough to tell the integrator exactly what failed. */
export interface ScimAnswer {
  method: string;
  path: string;
  sent?: unknown;
  status: number;
  headers: Headers;
  /** The body parsed as JSON; undefined when empty (204) or not JSON (see `text`). */
  body: Json;
  text: string;
}

export interface ScimRequestOptions {
  body?: unknown;
  /** A bearer token other than the default backend's; `null` sends no Authorization header. */
  token?: string | null;
  headers?: Record<string, string>;
  /** The Content-Type of a body: `application/scim+json` unless said otherwise. */
  contentType?: string;
  /** A raw body string sent as it is (a malformed document, say). */
  raw?: string;
}

export interface ScimHarness {
  server: TestServer;
  /** An administrator's access token for GraphQL. */
  adminToken: string;
  /** `<server>/scim/v2` */
  base: string;
  /** The SCIM token of each backend, made through GraphQL at start. */
  tokens: Record<string, string>;
  /** Issues a SCIM request with the default backend's token (the first asked for). */
  scim(method: string, path: string, options?: ScimRequestOptions): Promise<ScimAnswer>;
  createToken(backend: string, description?: string): Promise<{ token: string; id: string }>;
  revokeToken(id: string): Promise<void>;
  /** A GraphQL call as the administrator; throws with the errors when there are any. */
  graphql<T = Record<string, Json>>(query: string, variables?: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

export interface ScimHarnessOptions {
  /** The ids of the `scim` backends, in chain order after the database backend; the first is the default. */
  backends?: string[];
  /** Each scim backend's own `config` (docs/scim-provisioning.md "Setting up a SCIM backend"). */
  backendConfig?: Record<string, unknown>;
  /** More server configuration. */
  overrides?: Record<string, unknown>;
}

export async function startScimServer(kind: DatabaseKind, options: ScimHarnessOptions = {}): Promise<ScimHarness> {
  const backends = options.backends ?? ['hr'];
  const server = await startTestServer(kind, {
    identity: {
      backends: [
        { id: 'local', plugin: 'database' },
        ...backends.map((id) => ({ id, plugin: 'scim', config: options.backendConfig ?? {} })),
      ],
    },
    ...options.overrides,
  });
  try {
    const adminToken = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const base = `${server.url}/scim/v2`;

    const graphql = async <T>(query: string, variables?: Record<string, unknown>): Promise<T> => {
      const answer = await graphqlPost(server, adminToken, query, variables);
      if (answer.errors) throw new Error(`GraphQL ${query.trim().split('\n')[0]} answered errors: ${JSON.stringify(answer.errors)}`);
      return answer.data as T;
    };
    const createToken = async (backend: string, description = `tests of ${backend}`) => {
      const data = await graphql<{ createScimToken: { token: string; scimToken: { id: string } } }>(CREATE_TOKEN, {
        backend,
        description,
      });
      return { token: data.createScimToken.token, id: data.createScimToken.scimToken.id };
    };
    const tokens: Record<string, string> = {};
    for (const backend of backends) tokens[backend] = (await createToken(backend)).token;

    const scim = async (method: string, path: string, o: ScimRequestOptions = {}): Promise<ScimAnswer> => {
      const token = o.token === undefined ? tokens[backends[0]!] : o.token;
      const hasBody = o.body !== undefined || o.raw !== undefined;
      const res = await fetch(`${base}${path}`, {
        method,
        redirect: 'manual',
        headers: {
          accept: SCIM_TYPE,
          ...(hasBody ? { 'content-type': o.contentType ?? SCIM_TYPE } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...o.headers,
        },
        body: o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body)),
      });
      const text = await res.text();
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      return { method, path, sent: o.raw ?? o.body, status: res.status, headers: res.headers, body, text };
    };

    return {
      server,
      adminToken,
      base,
      tokens,
      scim,
      createToken,
      async revokeToken(id) {
        await graphql(REVOKE_TOKEN, { id });
      },
      graphql,
      stop: () => server.stop(),
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/** The request and the answer in one line, for a failure message the integrator can act on. */
export const describeExchange = (a: ScimAnswer): string =>
  `${a.method} /scim/v2${a.path}${a.sent === undefined ? '' : ` ${typeof a.sent === 'string' ? a.sent : JSON.stringify(a.sent)}`}` +
  ` -> ${a.status} ${a.headers.get('content-type') ?? ''} ${a.text.slice(0, 1500)}`;

/** Fails with the whole exchange unless the status is the one expected. */
export function expectStatus(a: ScimAnswer, status: number): void {
  if (a.status !== status) throw new Error(`expected ${status}, got ${a.status}:\n  ${describeExchange(a)}`);
}

/**
 * An error in SCIM's shape (RFC 7644 §3.12): the Error schema, `status` as a string (the RFC's examples,
 * and what Entra ID reads), the `scimType` when one is given, a `detail` a person can read.
 */
export function expectScimError(a: ScimAnswer, status: number, scimType?: string): void {
  expectStatus(a, status);
  try {
    // Entra ID: "The header for all the responses should be of content-Type: application/scim+json".
    expect(a.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(a.body?.schemas).toEqual([ERROR_SCHEMA]);
    expect(a.body.status).toBe(String(status));
    if (scimType) expect(a.body.scimType).toBe(scimType);
    expect(typeof a.body.detail).toBe('string');
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  in: ${describeExchange(a)}`);
  }
}

/** A ListResponse (RFC 7644 §3.4.2), its numbers as integers (Okta: "not as strings"). */
export function expectListResponse(a: ScimAnswer, totalResults?: number): Json[] {
  expectStatus(a, 200);
  try {
    expect(a.body.schemas).toEqual([LIST_RESPONSE]);
    expect(Number.isInteger(a.body.totalResults)).toBe(true);
    if (a.body.totalResults > 0 || a.body.Resources !== undefined) expect(Array.isArray(a.body.Resources)).toBe(true);
    if (a.body.startIndex !== undefined) expect(Number.isInteger(a.body.startIndex)).toBe(true);
    if (a.body.itemsPerPage !== undefined) expect(Number.isInteger(a.body.itemsPerPage)).toBe(true);
    if (totalResults !== undefined) expect(a.body.totalResults).toBe(totalResults);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  in: ${describeExchange(a)}`);
  }
  return a.body.Resources ?? [];
}

/** Runs `check` on a body, and says which exchange it was when it fails. */
export function about(a: ScimAnswer, check: () => void): void {
  try {
    check();
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  in: ${describeExchange(a)}`);
  }
}

/** A fresh suffix, so that each test's users and groups are its own. */
let counter = 0;
export const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

export interface AuditNode {
  kind: string;
  userId: string | null;
  details: string | null;
}

/** The audit events of one kind for one user, newest first, read as an administrator would. */
export async function auditOf(h: ScimHarness, kind: string, userId: string): Promise<Array<AuditNode & { parsed: Json }>> {
  const data = await h.graphql<{ auditEvents: { edges: Array<{ node: AuditNode }> } }>(
    'query($kind: String, $user: ID) { auditEvents(first: 50, kind: $kind, userId: $user) { edges { node { kind userId details } } } }',
    { kind, user: userId },
  );
  return data.auditEvents.edges.map((e) => ({ ...e.node, parsed: e.node.details ? JSON.parse(e.node.details) : null }));
}
