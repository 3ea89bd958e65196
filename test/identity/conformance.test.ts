import { CLI_ACTOR } from '../../src/audit/record.ts';
import { people, SPECIAL_NAME } from '../fixtures/ldap/directory.ts';
import { databaseKinds, type DatabaseKind } from '../helpers/databases.ts';
import { startTestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { backendConformance, type BackendFixture } from './conformance-suite.ts';

async function databaseFixture(kind: DatabaseKind): Promise<BackendFixture> {
  const server = await startTestServer(kind);
  const accounts = {
    active: { username: 'alice', password: 'alice-local-pw' },
    disabled: { username: 'carol', password: 'carol-local-pw' },
    special: { username: SPECIAL_NAME, password: 'special-local-pw' },
  };
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

for (const kind of databaseKinds) {
  backendConformance(`database on ${kind}`, () => databaseFixture(kind));
  backendConformance(`ldap on ${kind}`, () => ldapFixture(kind));
}
