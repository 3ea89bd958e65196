import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BASE_DN } from '../fixtures/ldap/directory.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import type { CodeFlowClient } from '../helpers/flow.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { active, signedIn, startOn, syncNow, type StartedServer } from './harness.ts';

const run = promisify(execFile);

/**
 * docs/directory-sync.md "Safety: a sync that would remove too many": a pass that cannot read the
 * whole directory, or would deprovision too many, deprovisions nobody, and says so.
 */
describe.each(databaseKinds)('directory sync safety on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let token: string;
  let app: CodeFlowClient;

  const enabledUsers = async (db: { sql: TestServer['sql'] }) =>
    (await db.sql('users').where({ backend: 'corp', disabled: false }).select('username')).map((r) => String(r.username)).sort();
  const auditOf = async (db: { sql: TestServer['sql'] }, kind: string) =>
    (await db.sql('audit_events').where({ kind }).select('details')).map((r) => JSON.parse(String(r.details)) as Record<string, unknown>);

  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true });
    server = await startTestServer(kind, ldapChain(ldapBackendConfig(slapd, { sync: { interval: 0 } })));
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    app = await server.client({ scopes: ['openid'], grantTypes: ['authorization_code', 'refresh_token'] });
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', created: 3 });
  });
  afterAll(async () => {
    await server?.stop();
    await slapd?.destroy();
  });

  test('a directory that is down, or hangs: the pass fails, nobody is deprovisioned, and the error is kept', async () => {
    const before = await enabledUsers(server);
    const lastSuccess = (await scrape(server.url)).find((f) => f.name === 'latchkey_directory_sync_last_success_timestamp_seconds');
    await slapd.stop();
    try {
      const { pass } = await syncNow(server, token);
      expect(pass).toMatchObject({ outcome: 'FAILED', deprovisioned: 0, created: 0, updated: 0 });
      expect(pass!.error).toContain('the directory could not be read whole, so nothing was changed');
    } finally {
      await slapd.start();
    }
    slapd.pause();
    try {
      const { pass } = await syncNow(server, token);
      expect(pass).toMatchObject({ outcome: 'FAILED', deprovisioned: 0 });
    } finally {
      slapd.resume();
    }
    expect(await enabledUsers(server)).toEqual(before);
    const backends = await graphqlPost(server, token, '{ identityBackends { id lastSync { outcome error lastSuccessAt } } }');
    const corp = (backends.data!.identityBackends as Array<{ id: string; lastSync: Record<string, unknown> }>).find(
      (b) => b.id === 'corp',
    )!;
    expect(corp.lastSync).toMatchObject({ outcome: 'FAILED', error: expect.stringContaining('could not be read whole') });
    expect(corp.lastSync.lastSuccessAt).not.toBeNull();
    const failed = await auditOf(server, 'directory.sync_failed');
    expect(failed).toHaveLength(2);
    expect(failed[0]).toMatchObject({ backend: 'corp', error: expect.stringContaining('could not be read whole') });
    // The last success is still the one before the outage.
    const metrics = await scrape(server.url);
    expect(metrics.find((f) => f.name === 'latchkey_directory_sync_last_success_timestamp_seconds')).toEqual(lastSuccess);
    expect(sample(metrics, 'latchkey_directory_sync_refused', { backend: 'corp' })).toBe(0);

    // Back up: the next pass applies, with nothing to do.
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', deprovisioned: 0, created: 0 });
  });

  test('a pass under way in another process: a clear error, and nothing runs twice', async () => {
    await server
      .sql('directory_syncs')
      .where({ backend: 'corp' })
      .update({ lease_holder: 'elsewhere:42', lease_until: Date.now() + 60_000 });
    try {
      const { pass, errors } = await syncNow(server, token);
      expect(pass).toBeUndefined();
      expect(errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'id' } });
      expect(errors?.[0]?.message).toContain('under way in another process (elsewhere:42)');
    } finally {
      await server.sql('directory_syncs').where({ backend: 'corp' }).update({ lease_holder: null, lease_until: null });
    }
  });

  describe('a base DN typo that would remove everyone', () => {
    let typo: StartedServer;
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-sync-cli-'));

    afterAll(async () => {
      await typo?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('is refused with nobody deprovisioned, the metric set and an audit event; the CLI with --allow-mass-leave applies it', async () => {
      const alice = await signedIn(server, app, 'alice');
      // An existing subtree without the people: every user would be a leaver.
      const wrongBase = { baseDN: `ou=services,${BASE_DN}`, filter: '(&(objectClass=inetOrgPerson)(uid={username}))' };
      const identity = ldapChain(ldapBackendConfig(slapd, { userSearch: wrongBase, sync: { interval: 0 } })).identity;
      // The deployment restarted with the typo: the same database, another configuration.
      await server.close();
      typo = await startOn(server.db.url, { identity });
      const typoToken = (await adminCliToken(typo as unknown as TestServer, 'admin', ADMIN_PASSWORD)).access_token;
      const before = await enabledUsers(typo);

      const { pass } = await syncNow(typo, typoToken);
      expect(pass).toMatchObject({ outcome: 'REFUSED', users: 0, created: 0, updated: 0, deprovisioned: 0 });
      expect(pass!.error).toContain('3 of the 3 enabled users (100%) would be deprovisioned, more than maxLeaverShare (10%)');
      expect(pass!.error).toContain('npm run latchkey -- sync corp --allow-mass-leave');
      expect(await enabledUsers(typo)).toEqual(before);
      expect(await active(typo, app, alice.tokens.access_token)).toBe(true);
      expect(sample(await scrape(typo.url), 'latchkey_directory_sync_refused', { backend: 'corp' })).toBe(1);
      expect(await auditOf(typo, 'directory.sync_refused')).toEqual([
        { backend: 'corp', leavers: 3, enabled: 3, listed: 0, maxLeaverShare: 0.1 },
      ]);

      // The operator looks, and applies it from the shell with the deployment's configuration.
      const file = join(dir, 'latchkey.config.json');
      writeFileSync(file, JSON.stringify({ identity }));
      const cli = async (...args: string[]) => {
        try {
          const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli/latchkey.ts', ...args], {
            env: { PATH: process.env.PATH!, DATABASE_URL: server.db.url, LATCHKEY_SECRET: typo.ctx.config.secret!, LATCHKEY_CONFIG: file },
          });
          return { code: 0, stdout, stderr };
        } catch (err) {
          return err as { code: number; stdout: string; stderr: string };
        }
      };
      const refused = await cli('sync', 'corp');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('the sync of corp was refused: 3 of the 3 enabled users');
      expect(JSON.parse(refused.stdout)).toMatchObject({ outcome: 'refused', deprovisioned: 0 });

      const applied = await cli('sync', 'corp', '--allow-mass-leave');
      expect(applied.code).toBe(0);
      expect(JSON.parse(applied.stdout)).toMatchObject({ backend: 'corp', outcome: 'applied', users: 0, deprovisioned: 3, error: null });
      expect(await enabledUsers(typo)).toEqual([]);
      expect(await active(typo, app, alice.tokens.access_token)).toBe(false);
      expect(sample(await scrape(typo.url), 'latchkey_directory_sync_refused', { backend: 'corp' })).toBe(0);
      expect((await auditOf(typo, 'user.deprovisioned')).map((d) => [d.backend, d.reason])).toEqual([
        ['corp', 'not_found'],
        ['corp', 'not_found'],
        ['corp', 'not_found'],
      ]);
    });
  });
});
