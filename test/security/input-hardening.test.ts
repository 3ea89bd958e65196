import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { deflateSync } from 'node:zlib';
import { adminCliToken, graphqlPost, type GraphQLAnswer } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import { get, postForm, type Fields } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

const NUL = '\u0000';

/**
 * docs/decisions.md and 5: input a database or a decoder cannot take is the client's error, answered in the
 * endpoint's own shape (OAuth JSON, an authorize error page or redirect, a GraphQL BAD_USER_INPUT),
 * never a 500; and the GraphQL cost limit cannot be talked down.
 */
describe.each(databaseKinds)('input hardening on %s', (kind) => {
  let server: TestServer;
  let app: { clientId: string; clientSecret: string | null; redirectUri: string };
  let adminToken: string;

  beforeAll(async () => {
    server = await startTestServer(kind);
    // Taken before any failed sign-in below, so no throttle stands between the admin and the token.
    adminToken = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    app = await server.client({ grantTypes: ['authorization_code', 'password', 'refresh_token'] });
    await server.user('nul-victim', 'nul-victim-password-1');
  });
  afterAll(() => server.stop());

  const token = (fields: Fields) => postForm(`${server.url}/oauth/v20/token`, fields);
  const passwordGrant = (fields: Fields = {}) =>
    token({
      grant_type: 'password',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
      username: 'nul-victim',
      password: 'nul-victim-password-1',
      ...fields,
    });

  async function expectTokenError(res: Response, errors: string[], label: string): Promise<void> {
    const text = await res.text();
    expect({ label, status: res.status }).toEqual({ label, status: 400 });
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const body = JSON.parse(text) as { error: string };
    expect({ label, error: errors.includes(body.error) ? 'expected' : body.error }).toEqual({ label, error: 'expected' });
  }

  /** An authorize refusal: an HTML error page (400) naming the code, or a redirect carrying it. Never a 500. */
  async function expectAuthorizeInvalidRequest(res: Response, label: string): Promise<void> {
    if (res.status === 302 || res.status === 303) {
      const q = new URL(res.headers.get('location')!).searchParams;
      expect({ label, error: q.get('error') }).toEqual({ label, error: 'invalid_request' });
      return;
    }
    const html = await res.text();
    expect({ label, status: res.status }).toEqual({ label, status: 400 });
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(html).toContain('invalid_request');
  }

  test('a NUL byte in client_id, username, password or nonce at the token endpoint is invalid_request (400 JSON)', async () => {
    await expectTokenError(
      await token({
        grant_type: 'password',
        client_id: `${app.clientId}${NUL}`,
        client_secret: app.clientSecret!,
        username: 'nul-victim',
        password: 'nul-victim-password-1',
      }),
      ['invalid_request'],
      'client_id',
    );
    await expectTokenError(
      await token({ grant_type: 'password', client_id: `x${NUL}y`, username: 'nul-victim', password: 'nul-victim-password-1' }),
      ['invalid_request'],
      'unknown client_id',
    );
    await expectTokenError(await passwordGrant({ username: `nul-victim${NUL}` }), ['invalid_request'], 'username');
    await expectTokenError(await passwordGrant({ username: `${NUL}` }), ['invalid_request'], 'username NUL only');
    await expectTokenError(await passwordGrant({ password: `nul-victim-password-1${NUL}` }), ['invalid_request'], 'password');
    await expectTokenError(await passwordGrant({ nonce: `n${NUL}n` }), ['invalid_request'], 'nonce');
    // The account behind the NUL-laden attempts still signs in (nothing was held against it).
    expect((await passwordGrant()).status).toBe(200);
  });

  test('a username of 400 characters in a password grant is refused as the client error it is', async () => {
    await expectTokenError(
      await passwordGrant({ username: 'u'.repeat(400) }),
      ['invalid_grant', 'invalid_request'],
      '400-character username',
    );
    await expectTokenError(
      await passwordGrant({ username: 'é'.repeat(400) }),
      ['invalid_grant', 'invalid_request'],
      '400 two-byte characters',
    );
    await expectTokenError(
      await passwordGrant({ username: `${'u'.repeat(399)}${NUL}` }),
      ['invalid_request'],
      '400 characters ending in NUL',
    );
  });

  test('a NUL byte in client_id or nonce at authorize, or in the login form, is invalid_request, never a 500', async () => {
    const base = { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code', state: 'st' };
    await expectAuthorizeInvalidRequest(
      await get(`${server.url}/oauth/v20/authorize`, { ...base, client_id: `${app.clientId}${NUL}` }),
      'client_id',
    );
    await expectAuthorizeInvalidRequest(
      await get(`${server.url}/oauth/v20/authorize`, { ...base, client_id: `x${NUL}` }),
      'unknown client_id',
    );
    await expectAuthorizeInvalidRequest(await get(`${server.url}/oauth/v20/authorize`, { ...base, nonce: `n${NUL}n` }), 'nonce');

    for (const [label, fields] of [
      ['username', { username: `nul-victim${NUL}`, password: 'nul-victim-password-1' }],
      ['password', { username: 'nul-victim', password: `nul-victim-password-1${NUL}` }],
    ] as const) {
      const browser = new Browser(server);
      const page = await browser.authorize(base);
      expect(page.status).toBe(200);
      await expectAuthorizeInvalidRequest(await browser.submit(page, fields), `login form ${label}`);
    }
    // The same login form with clean values signs in: the refusals above were about the NUL alone.
    const browser = new Browser(server);
    const ok = await browser.submit(await browser.authorize({ ...base, nonce: 'clean-nonce' }), {
      username: 'nul-victim',
      password: 'nul-victim-password-1',
    });
    expect(ok.status).toBe(303);
    expect(new URL(ok.headers.get('location')!).searchParams.get('code')).toBeTruthy();
  });

  test('a corrupt gzip or deflate body at the token endpoint is invalid_request (400 JSON)', async () => {
    const corrupt = (encoding: string, body: Buffer) =>
      fetch(`${server.url}/oauth/v20/token`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': encoding },
        body: new Uint8Array(body),
      });
    await expectTokenError(await corrupt('gzip', Buffer.from('not gzip at all')), ['invalid_request'], 'gzip');
    await expectTokenError(await corrupt('deflate', Buffer.from('not deflate at all')), ['invalid_request'], 'deflate');
    // A deflate stream cut short is corrupt too.
    const whole = deflateSync(Buffer.from(`grant_type=password&client_id=${app.clientId}&username=nul-victim&password=x`));
    await expectTokenError(await corrupt('deflate', whole.subarray(0, whole.length - 6)), ['invalid_request'], 'truncated deflate');
  });

  describe('GraphQL', () => {
    const gql = (query: string, variables?: Record<string, unknown>) => graphqlPost(server, adminToken, query, variables);
    const CREATE_USER = 'mutation($input: CreateUserInput!) { createUser(input: $input) { id displayName } }';

    function expectBadUserInput(res: GraphQLAnswer, field: string | undefined, label: string): void {
      const first = res.errors?.[0];
      expect({ label, code: first?.extensions?.code }).toEqual({ label, code: 'BAD_USER_INPUT' });
      if (field) {
        expect(first?.extensions?.field).toBe(field);
        expect(first?.message).toContain(field);
      }
      expect(res.status).toBeLessThan(500);
    }

    async function usernames(): Promise<string[]> {
      const res = await gql('{ users(first: 100) { edges { node { username } } } }');
      expect(res.errors).toBeUndefined();
      return (res.data!.users as { edges: Array<{ node: { username: string } }> }).edges.map((e) => e.node.username);
    }

    test('createUser with a 300-character or NUL-laden displayName is BAD_USER_INPUT naming displayName; nothing is written', async () => {
      expectBadUserInput(
        await gql(CREATE_USER, { input: { username: 'long-name', password: 'long-name-password', displayName: 'D'.repeat(300) } }),
        'displayName',
        '300 characters',
      );
      expectBadUserInput(
        await gql(CREATE_USER, { input: { username: 'nul-name', password: 'nul-name-password', displayName: `Nul${NUL}Name` } }),
        'displayName',
        'NUL',
      );
      const names = await usernames();
      expect(names).not.toContain('long-name');
      expect(names).not.toContain('nul-name');
      // A displayName of an ordinary length is fine.
      const ok = await gql(CREATE_USER, { input: { username: 'fine-name', password: 'fine-name-password', displayName: 'D'.repeat(100) } });
      expect(ok.errors).toBeUndefined();
    });

    test('clients(search:) with a NUL is BAD_USER_INPUT, never INTERNAL_SERVER_ERROR', async () => {
      const res = await gql('query($s: String) { clients(search: $s) { totalCount } }', { s: `a${NUL}b` });
      expectBadUserInput(res, undefined, 'clients search');
      expect(res.errors![0]!.extensions?.field).toMatch(/search/);
      const inline = await gql('{ clients(search: "a\\u0000b") { totalCount } }');
      expectBadUserInput(inline, undefined, 'clients search, inline literal');
    });

    const refused = (res: GraphQLAnswer, label: string) => {
      expect({ label, errors: (res.errors?.length ?? 0) > 0 }).toEqual({ label, errors: true });
      const code = res.errors![0]!.extensions?.code;
      expect({ label, code: ['GRAPHQL_VALIDATION_FAILED', 'BAD_USER_INPUT'].includes(String(code)) ? 'refused' : code }).toEqual({
        label,
        code: 'refused',
      });
      expect({ label, users: (res.data as { users?: unknown } | null | undefined)?.users ?? null }).toEqual({ label, users: null });
    };

    test('first outside 1..100 is refused, never answered with data', async () => {
      for (const first of [-2147483648, -1, 0, 101, 2147483647]) {
        refused(await gql(`{ users(first: ${first}) { edges { node { id } } totalCount } }`), `users(first: ${first})`);
        refused(await gql('query($n: Int) { users(first: $n) { edges { node { id } } } }', { n: first }), `users(first: $n = ${first})`);
      }
      const ok = await gql('{ users(first: 1) { edges { node { id } } } }');
      expect(ok.errors).toBeUndefined();
    });

    const alias = (i: number, first = 100, directive = '') => `a${i}: users(first: ${first})${directive} { edges { node { id } } }`;
    const overCost = (res: GraphQLAnswer, label: string) => {
      expect({ label, data: res.data ?? null }).toEqual({ label, data: null });
      expect({ label, mentionsCost: (res.errors ?? []).some((e) => /cost/i.test(e.message)) }).toEqual({ label, mentionsCost: true });
    };

    test('700 aliases of users(first: 100) are over the cost limit, however the query tries to price itself down', async () => {
      const plain = Array.from({ length: 700 }, (_, i) => alias(i));
      overCost(await gql(`{ ${plain.join(' ')} }`), '700 aliases');

      const negative = Array.from({ length: 700 }, (_, i) => (i === 0 ? alias(i, -2147483648) : alias(i)));
      overCost(await gql(`{ ${negative.join(' ')} }`), 'one alias with first: -2147483648');

      const skippedNegative = Array.from({ length: 700 }, (_, i) => (i === 0 ? alias(i, -2147483648, ' @skip(if: true)') : alias(i)));
      overCost(await gql(`{ ${skippedNegative.join(' ')} }`), 'a skipped alias with first: -2147483648');

      const halfSkipped = Array.from({ length: 700 }, (_, i) => alias(i, 100, i % 2 === 0 ? ' @skip(if: true)' : ''));
      overCost(await gql(`{ ${halfSkipped.join(' ')} }`), 'half of them @skip(if: true)');

      const negativeInVariable = Array.from({ length: 700 }, (_, i) =>
        i === 0 ? 'a0: users(first: $n) { edges { node { id } } }' : alias(i),
      );
      overCost(
        await gql(`query($n: Int) { ${negativeInVariable.join(' ')} }`, { n: -2147483648 }),
        'first: -2147483648 through a variable',
      );
    });
  });
});
