import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

const run = promisify(execFile);

/** The operator CLI and the admin API call the same services: the same answer, the same audit trail. */
describe.each(databaseKinds)('the CLI and GraphQL agree on %s', (kind) => {
  let server: TestServer;
  let token: string;

  /** `npm run latchkey -- …` on the test server's database: its exit code, output and error output. */
  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli/latchkey.ts', ...args], {
        env: { PATH: process.env.PATH!, DATABASE_URL: server.db.url, LATCHKEY_SECRET: server.ctx.config.secret! },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  const actions = async (action: string) =>
    (await server.sql('audit_events').where({ kind: 'admin.change' }).select('details', 'client_id'))
      .map((r) => ({ ...(JSON.parse(String(r.details)) as { action: string; via: string }), clientId: r.client_id as string | null }))
      .filter((d) => d.action === action);

  beforeAll(async () => {
    server = await startTestServer(kind);
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
  });
  afterAll(() => server.stop());

  test('admin-cli cannot be deleted, from either, and nothing is audited as deleted', async () => {
    const fromCli = await cli('client', 'delete', '--client-id', 'admin-cli');
    expect(fromCli.code).toBe(2);
    expect(fromCli.stderr).toContain('admin-cli is built in and cannot be deleted');

    const fromApi = await graphqlPost(server, token, 'mutation { deleteClient(clientId: "admin-cli") }');
    expect(fromApi.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'clientId' });
    expect(fromApi.errors?.[0]?.message).toContain('admin-cli is built in and cannot be deleted');

    expect(await server.ctx.clients.find('admin-cli')).toBeDefined();
    expect(await actions('client.delete')).toEqual([]);
  });

  test('registering and deleting a client writes the same audit events from either', async () => {
    const created = await cli('client', 'create', '--name', 'From the shell', '--redirect-uri', 'https://shell.example.com/cb');
    expect(created.code).toBe(0);
    const shellClient = (JSON.parse(created.stdout) as { clientId: string }).clientId;
    const registered = await graphqlPost(
      server,
      token,
      'mutation { registerClient(input: { name: "From the API", redirectUris: ["https://api.example.com/cb"] }) { client { clientId } } }',
    );
    const apiClient = (registered.data as { registerClient: { client: { clientId: string } } }).registerClient.client.clientId;

    expect((await cli('client', 'delete', '--client-id', shellClient)).code).toBe(0);
    expect((await graphqlPost(server, token, `mutation { deleteClient(clientId: "${apiClient}") }`)).data).toEqual({ deleteClient: true });

    for (const action of ['client.register', 'client.delete']) {
      const events = await actions(action);
      expect(events).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ clientId: shellClient, via: 'cli' }),
          expect.objectContaining({ clientId: apiClient, via: 'graphql' }),
        ]),
      );
    }
  });
});
