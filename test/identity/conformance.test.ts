import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { people, SPECIAL_NAME } from '../fixtures/ldap/directory.ts';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.ts';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

interface Account {
  username: string;
  password: string;
}

/** What the suite needs from a backend: a server whose chain starts with it, and its test accounts. */
interface BackendFixture {
  server: TestServer;
  /** The backend under test, as the chain holds it. */
  backendId: string;
  active: Account;
  disabled: Account;
  special: Account;
  stop(): Promise<void>;
}

async function databaseFixture(kind: DatabaseKind): Promise<BackendFixture> {
  const server = await startTestServer(kind);
  const accounts = { active: { username: 'alice', password: 'alice-local-pw' }, disabled: { username: 'carol', password: 'carol-local-pw' }, special: { username: SPECIAL_NAME, password: 'special-local-pw' } };
  for (const a of Object.values(accounts)) await server.user(a.username, a.password);
  const carol = (await server.ctx.users.findByUsername('local', 'carol'))!;
  await server.ctx.users.update(carol.id, { disabled: true }, CLI_ACTOR);
  return { server, backendId: 'local', ...accounts, stop: () => server.stop() };
}

async function ldapFixture(kind: DatabaseKind): Promise<BackendFixture> {
  const slapd: Slapd = await startSlapd();
  const server = await startTestServer(kind, ldapChain(ldapBackendConfig(slapd)));
  const account = (p: { uid: string; password: string }) => ({ username: p.uid, password: p.password });
  return {
    server,
    backendId: 'corp',
    active: account(people.alice),
    disabled: account(people.carol),
    special: account(people.special),
    async stop() {
      await server.stop();
      await slapd.destroy();
    },
  };
}

const fixtures: Array<[string, DatabaseKind, (kind: DatabaseKind) => Promise<BackendFixture>]> = databaseKinds.flatMap((kind) => [
  ['database', kind, databaseFixture] as const,
  ['ldap', kind, ldapFixture] as const,
]);

/**
 * One suite, every backend (Dex's storage conformance idea): what a user sees through the password
 * grant must not depend on where their password lives.
 */
describe.each(fixtures)('backend conformance: %s on %s', (_name, kind, makeFixture) => {
  let f: BackendFixture;
  let client: { clientId: string; clientSecret: string | null };

  const grant = (username: string, password: string) =>
    postForm(`${f.server.url}/oauth/v20/token`, { grant_type: 'password', username, password }, { authorization: basic(client.clientId, client.clientSecret!) });
  const me = async (accessToken: string) => (await (await get(`${f.server.url}/api/oauth/v20/me`, { access_token: accessToken })).json()) as Record<string, unknown>;
  const refused = async (res: Response) => ({ status: res.status, body: await res.json() });
  const wrongPasswordAnswer = { status: 400, body: { error: 'invalid_grant', error_description: 'invalid username or password' } };

  beforeAll(async () => {
    f = await makeFixture(kind);
    client = await f.server.client({ grantTypes: ['password'], scopes: ['openid', 'profile', 'email'] });
  });
  afterAll(() => f?.stop());

  test('the right password signs in, with the same userid every time', async () => {
    const first = await grant(f.active.username, f.active.password);
    expect(first.status).toBe(200);
    const a = await me(((await first.json()) as { access_token: string }).access_token);
    expect(a.uid).toBe(f.active.username);
    const b = await me(((await (await grant(f.active.username, f.active.password)).json()) as { access_token: string }).access_token);
    expect(b.userid).toBe(a.userid);
    expect((await f.server.ctx.users.find(String(a.userid)))?.backend).toBe(f.backendId);
  });

  test('the name is case-insensitive', async () => {
    const res = await grant(f.active.username.toUpperCase(), f.active.password);
    expect(res.status).toBe(200);
    expect((await me(((await res.json()) as { access_token: string }).access_token)).uid).toBe(f.active.username);
  });

  test('a wrong password and an unknown user get the same answer', async () => {
    expect(await refused(await grant(f.active.username, 'not-the-password'))).toEqual(wrongPasswordAnswer);
    expect(await refused(await grant('nobody-by-this-name', 'not-the-password'))).toEqual(wrongPasswordAnswer);
  });

  test('an empty password is refused, by the grant and by the backend itself', async () => {
    const res = await grant(f.active.username, '');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
    // Straight to the backend: the test directory accepts unauthenticated binds, so a backend that sent
    // this bind would answer yes here.
    const backend = f.server.ctx.identity.members.find((m) => m.id === f.backendId)!.backend;
    expect((await backend.checkPassword(f.active.username, '')).validPassword).toBe(false);
  });

  test('a disabled account is refused even with its right password', async () => {
    expect(await refused(await grant(f.disabled.username, f.disabled.password))).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'the account is disabled' },
    });
  });

  test('a name full of filter and DN metacharacters signs in as itself', async () => {
    const res = await grant(f.special.username, f.special.password);
    expect(res.status).toBe(200);
    expect((await me(((await res.json()) as { access_token: string }).access_token)).uid).toBe(f.special.username);
  });

  test.each(['*', `${'alice'})(uid=*`, '*)(|(uid=*', 'alice*', '*)(objectClass=*))(|(uid=*'])('injection through the username (%s) signs nobody in', async (name) => {
    expect(await refused(await grant(name, f.active.password))).toEqual(wrongPasswordAnswer);
  });
});
