import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode, type CodeFlowClient } from '../helpers/flow.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * RFC 6749 §4.1.2: a replayed code revokes what it issued. A spent code names the family of the tokens
 * issued from it (migrations/20261209000000_code_family.ts): that holds for a client without refresh
 * tokens, for a refresh token's successors, and for tokens issued before codes named their family
 * (they carry the code's hash instead).
 */
describe.each(databaseKinds)('a replayed code revokes what it issued, on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('alice', 'alice-password-1');
  });
  afterAll(() => server?.stop());

  const me = async (token: string) => (await get(`${server.url}/api/oauth/v20/me`, { access_token: token })).status;
  const refresh = async (client: CodeFlowClient, token: string) =>
    (await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'refresh_token', refresh_token: token },
      { authorization: basic(client.clientId, client.clientSecret!) },
    ).then((r) => r.json())) as { access_token?: string; refresh_token?: string; error?: string };
  async function exchanged(client: CodeFlowClient) {
    const { code } = await obtainCode(new Browser(server), client, 'alice', 'alice-password-1');
    const tokens = (await (await exchangeCode(server, client, code!)).json()) as { access_token: string; refresh_token?: string };
    return { code: code!, ...tokens };
  }
  const replay = async (client: CodeFlowClient, code: string) => {
    const res = await exchangeCode(server, client, code);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_code' });
  };

  test('a client without refresh tokens: its access token', async () => {
    const client = await server.client({ grantTypes: ['authorization_code'] });
    const first = await exchanged(client);
    expect(first.refresh_token).toBeUndefined();
    expect(await me(first.access_token)).toBe(200);
    await replay(client, first.code);
    expect(await me(first.access_token)).toBe(401);
  });

  test("a refresh token's successors and their access tokens", async () => {
    const client = await server.client({ grantTypes: ['authorization_code', 'refresh_token'] });
    const first = await exchanged(client);
    const second = await refresh(client, first.refresh_token!);
    expect(await me(second.access_token!)).toBe(200);
    await replay(client, first.code);
    expect(await me(first.access_token)).toBe(401);
    expect(await me(second.access_token!)).toBe(401);
    expect((await refresh(client, second.refresh_token!)).error).toBe('invalid_refresh_token');
  });

  test('tokens issued before codes named their family: revoked by the code they carry', async () => {
    const client = await server.client({ grantTypes: ['authorization_code', 'refresh_token'] });
    const first = await exchanged(client);
    // The rows as the version before wrote them: the tokens carry the code's hash, the code no family
    // (their family is one the code does not know).
    const codeHash = createHash('sha256').update(first.code).digest('base64url');
    const hashOf = (t: string) => createHash('sha256').update(t).digest('base64url');
    expect(await server.sql('auth_codes').where({ code_hash: codeHash }).update({ family_id: null })).toBe(1);
    const unknownFamily = randomUUID();
    for (const [table, token] of [
      ['access_tokens', first.access_token],
      ['refresh_tokens', first.refresh_token!],
    ] as const) {
      expect(
        await server
          .sql(table)
          .where({ token_hash: hashOf(token) })
          .update({ code_hash: codeHash, family_id: unknownFamily }),
      ).toBe(1);
    }
    await replay(client, first.code);
    expect(await me(first.access_token)).toBe(401);
    expect((await refresh(client, first.refresh_token!)).error).toBe('invalid_refresh_token');
  });
});
