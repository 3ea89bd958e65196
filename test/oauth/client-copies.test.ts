import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Each process keeps a copy of every client it has read and uses it while the row's `version` is the
 * one it read (src/clients/queries.ts `find`). Whatever changes the row, the next token request must
 * see the client as it is now: a change through the admin API, one at the SQL prompt, and a client
 * deleted and registered again under the same id (whose new row must never pass for the old one).
 */
describe.each(databaseKinds)('a kept client copy never outlives its row, on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server?.stop());

  const clientCredentials = async (clientId: string, clientSecret: string) => {
    const res = await postForm(`${server.url}/oauth/v20/token`, {
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    });
    const body = (await res.json()) as Record<string, unknown>;
    return { status: res.status, error: body.error, token: body.access_token };
  };
  const register = async (clientId: string) => {
    const { clientSecret } = await server.ctx.clients.register(
      { clientId, name: `App ${clientId}`, redirectUris: [], grantTypes: ['client_credentials'] },
      CLI_ACTOR,
    );
    return clientSecret!;
  };
  const sql = (text: string, bindings: unknown[]) => server.sql.raw(text, bindings as never);

  test('registered again under its id after a delete: only the new secret is taken', async () => {
    const first = await register('reborn');
    expect((await clientCredentials('reborn', first)).status).toBe(200); // the process keeps a copy now
    expect(await server.ctx.clients.remove('reborn', CLI_ACTOR)).toBe(true);
    const second = await register('reborn');
    expect(await clientCredentials('reborn', first)).toMatchObject({ status: 401, error: 'invalid_client' });
    expect(await clientCredentials('reborn', second)).toMatchObject({ status: 200, token: expect.any(String) });
  });

  test('deleted and inserted again at the SQL prompt, as a restore would: the restored row is read', async () => {
    const first = await register('restored');
    const second = await register('restored-other');
    expect((await clientCredentials('restored', first)).status).toBe(200);
    // The row comes back as a copy of another client's (its secret hash with it), its version left to the database.
    const columns = Object.keys(await server.sql('clients').columnInfo())
      .filter((c) => c !== 'client_id' && c !== 'version')
      .join(', ');
    await server.sql.transaction(async (trx) => {
      await trx.raw('delete from clients where client_id = ?', ['restored']);
      await trx.raw(`insert into clients (client_id, ${columns}) select ?, ${columns} from clients where client_id = ?`, [
        'restored',
        'restored-other',
      ]);
    });
    expect(await clientCredentials('restored', first)).toMatchObject({ status: 401, error: 'invalid_client' });
    expect(await clientCredentials('restored', second)).toMatchObject({ status: 200, token: expect.any(String) });
  });

  test('a version an UPDATE at the SQL prompt sets itself is replaced: an old version never comes back', async () => {
    const first = await register('pinned');
    const second = await register('pinned-other');
    expect((await clientCredentials('pinned', first)).status).toBe(200); // kept at this version
    const versionOf = async () =>
      ((await server.sql('clients').where({ client_id: 'pinned' }).select('version')) as Array<{ version: unknown }>)[0]?.version;
    const kept = await versionOf();
    await sql('update clients set name = ? where client_id = ?', ['Pinned, renamed', 'pinned']);
    // The row goes back to the kept version by hand, with another secret.
    await sql('update clients set secret_hash = (select secret_hash from clients where client_id = ?), version = ? where client_id = ?', [
      'pinned-other',
      kept,
      'pinned',
    ]);
    expect(String(await versionOf())).not.toBe(String(kept));
    expect(await clientCredentials('pinned', first)).toMatchObject({ status: 401, error: 'invalid_client' });
    expect(await clientCredentials('pinned', second)).toMatchObject({ status: 200, token: expect.any(String) });
    // A wrong secret on a copy that is the row is refused as it always was.
    expect(await clientCredentials('pinned', 'not-the-secret')).toMatchObject({ status: 401, error: 'invalid_client' });
  });

  test('twenty requests at once right after a change: each answered from the row as it is', async () => {
    const secret = await register('crowded');
    expect((await clientCredentials('crowded', secret)).status).toBe(200);
    const twenty = () => Promise.all(Array.from({ length: 20 }, () => clientCredentials('crowded', secret)));
    await sql('update clients set oauth_enabled = ? where client_id = ?', [false, 'crowded']);
    expect((await twenty()).map((a) => a.error)).toEqual(Array(20).fill('app_unsupport_oauth'));
    await sql('update clients set oauth_enabled = ? where client_id = ?', [true, 'crowded']);
    // The kept copy (OAuth off) refuses each of them until it is checked against the row.
    expect((await twenty()).map((a) => a.status)).toEqual(Array(20).fill(200));
    await sql('update clients set name = ? where client_id = ?', ['Crowded, renamed', 'crowded']);
    // The copy would take them: each token's insert finds another version, and the request runs again.
    const answers = await twenty();
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const tokens = answers.map((a) => a.token as string);
    expect(new Set(tokens).size).toBe(20);
    const stored = await server.sql('access_tokens').where({ client_id: 'crowded' }).count({ n: '*' }).first();
    expect(Number(stored?.n)).toBe(1 + 20 + 20);
  });

  test("introspection: a caller's role taken away at the SQL prompt holds at its next request", async () => {
    const api = await server.ctx.clients.register(
      { clientId: 'orders-api', name: 'Orders API', redirectUris: [], grantTypes: ['client_credentials'], roles: ['introspect'] },
      CLI_ACTOR,
    );
    const other = await register('introspected');
    const { token } = await clientCredentials('introspected', other);
    const introspect = async (presented = token as string) => {
      const res = await postForm(`${server.url}/oauth/v20/introspect`, {
        token: presented,
        client_id: 'orders-api',
        client_secret: api.clientSecret!,
      });
      return { status: res.status, ...((await res.json()) as Record<string, unknown>) };
    };
    expect(await introspect()).toMatchObject({ status: 200, active: true, client_id: 'introspected' }); // kept now
    await sql('update clients set roles = ? where client_id = ?', ['[]', 'orders-api']);
    expect(await introspect()).toEqual({ status: 200, active: false });
    await sql('update clients set roles = ? where client_id = ?', ['["introspect"]', 'orders-api']);
    expect(await introspect()).toMatchObject({ status: 200, active: true });
    expect(await introspect('not-a-token')).toEqual({ status: 200, active: false });
    await sql('delete from clients where client_id = ?', ['orders-api']);
    expect(await introspect('not-a-token')).toMatchObject({ error: 'invalid_client_id' });
    expect(await introspect()).toMatchObject({ error: 'invalid_client_id' });
  });

  test('OAuth turned off at the SQL prompt holds at the next request, and on again', async () => {
    const secret = await register('switched');
    expect((await clientCredentials('switched', secret)).status).toBe(200);
    await sql('update clients set oauth_enabled = ? where client_id = ?', [false, 'switched']);
    expect(await clientCredentials('switched', secret)).toMatchObject({ error: 'app_unsupport_oauth' });
    await sql('update clients set oauth_enabled = ? where client_id = ?', [true, 'switched']);
    expect(await clientCredentials('switched', secret)).toMatchObject({ status: 200, token: expect.any(String) });
  });
});
