import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { hash } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The example backend of docs/identity-backends.md's "Writing a backend", exactly as printed there. */
function readmeExample(): string {
  const readme = readFileSync(`${root}docs/identity-backends.md`, 'utf8');
  const section = readme.slice(readme.indexOf('## Writing a backend'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/identity-backends.md: no ts block under "Writing a backend"');
  return block[1]!;
}

describe('the example backend of docs/identity-backends.md, loaded from a plugins/ folder by name', () => {
  const name = `readme-example-${randomBytes(4).toString('hex')}`;
  let server: TestServer;
  let client: { clientId: string; clientSecret: string | null };
  const grant = (username: string, password: string) =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password, scope: 'openid email groups' },
      { authorization: basic(client.clientId, client.clientSecret!) },
    );

  beforeAll(async () => {
    mkdirSync(`${root}plugins/${name}`);
    writeFileSync(`${root}plugins/${name}/index.ts`, readmeExample());
    const users = [
      { username: 'pat', hash: await hash('pat-partner-pw', { algorithm: 2 }), email: 'pat@partner.example', groups: ['partners'] },
    ];
    server = await startTestServer('sqlite', {
      identity: {
        backends: [
          { id: 'partners', plugin: name, config: { users } },
          { id: 'local', plugin: 'database' },
        ],
      },
    });
    client = await server.client({ grantTypes: ['password'], scopes: ['openid', 'email', 'groups'] });
    await server.user('lee', 'lee-local-password');
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(`${root}plugins/${name}`, { recursive: true, force: true });
  });

  test('its users sign in and get their claims; wrong passwords are refused; other names fall through', async () => {
    const ok = await grant('pat', 'pat-partner-pw');
    expect(ok.status).toBe(200);
    const token = ((await ok.json()) as { access_token: string }).access_token;
    const info = (await (await get(`${server.url}/connect/v10/userinfo`, {}, { authorization: `Bearer ${token}` })).json()) as Record<
      string,
      unknown
    >;
    expect(info).toMatchObject({ email: 'pat@partner.example', groups: ['partners'] });
    expect((await server.ctx.users.find(String(info.sub)))?.backend).toBe('partners');

    expect((await grant('pat', 'wrong')).status).toBe(400);
    expect((await grant('lee', 'lee-local-password')).status).toBe(200);
  });

  test('a config its schema rejects stops the start, naming the backend, plugin and key', async () => {
    await expect(
      startTestServer('sqlite', {
        identity: { backends: [{ id: 'partners', plugin: name, config: { users: [{ username: 'x', hash: 'plain' }] } }] },
      }),
    ).rejects.toThrow(`identity backend "partners" (plugin "${name}"): invalid config: config.users.0.hash`);
  });
});
