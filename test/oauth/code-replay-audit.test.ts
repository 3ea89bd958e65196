import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode, type CodeFlowClient } from '../helpers/flow.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The token service writes the events of an exchange: one `token.issued` per issue, and one
 * `code.replayed` per replayed request, whether the replay comes after the exchange or races it.
 */
describe.each(databaseKinds)('a code exchange and its replays, audited by the token service, on %s', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('alice', 'alice-password-1', { email: 'alice@example.org' });
  });
  afterAll(() => server?.stop());

  const events = (kindOf: string, clientId: string) =>
    server.sql('audit_events').where({ kind: kindOf, client_id: clientId }).select('id', 'user_id', 'details');

  async function codeFor(): Promise<{ client: CodeFlowClient; code: string }> {
    const client = await server.client();
    const { code } = await obtainCode(new Browser(server), client, 'alice', 'alice-password-1', { scope: 'openid email', nonce: 'n-0S6' });
    return { client, code: code! };
  }

  test('a replay after the exchange is refused and audited once; the exchange is audited once, its id_token bound to its access token', async () => {
    const { client, code } = await codeFor();
    const first = await exchangeCode(server, client, code);
    expect(first.status).toBe(200);
    const body = (await first.json()) as { access_token: string; id_token: string };
    const idToken = decodeJwt(body.id_token);
    expect(idToken).toMatchObject({ aud: client.clientId, nonce: 'n-0S6', email: 'alice@example.org', amr: ['pwd'] });
    expect(typeof idToken.at_hash).toBe('string');
    expect(typeof idToken.auth_time).toBe('number');

    const replay = await exchangeCode(server, client, code);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe('invalid_code');
    expect(await events('code.replayed', client.clientId)).toHaveLength(1);
    const issued = await events('token.issued', client.clientId);
    expect(issued).toHaveLength(1);
    expect(JSON.parse(String(issued[0]!.details))).toMatchObject({ grant: 'authorization_code', scope: 'openid email' });
  });

  test('replays racing the exchange: one wins, and each loser is audited once', async () => {
    const { client, code } = await codeFor();
    const answers = await Promise.all(Array.from({ length: 6 }, () => exchangeCode(server, client, code)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, 400, 400, 400, 400, 400]);
    expect(await events('code.replayed', client.clientId)).toHaveLength(5);
    expect(await events('token.issued', client.clientId)).toHaveLength(1);
  });
});
