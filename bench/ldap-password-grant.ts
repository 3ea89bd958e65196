/**
 * Password-grant throughput through the LDAP backend, against the ceiling of the same directory: a loop
 * of plain binds with the same client library (ldapts) and the same concurrency. A benchmark, not a
 * test: run it by hand, on an otherwise idle machine.
 *   node --import tsx bench/ldap-password-grant.ts [seconds] [connections]
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { Client } from 'ldapts';
import pino from 'pino';
import ldapPlugin from '../plugins/ldap/index.ts';
import { people, personDn } from '../test/fixtures/ldap/directory.ts';
import { freePort } from '../test/helpers/ports.ts';
import { ldapBackendConfig, ldapChain, startSlapd } from '../test/helpers/slapd.ts';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 16);

async function bindLoop(url: string): Promise<number> {
  const clients = Array.from({ length: connections }, () => new Client({ url, timeout: 5000 }));
  const until = Date.now() + seconds * 1000;
  let binds = 0;
  await Promise.all(
    clients.map(async (c) => {
      while (Date.now() < until) {
        await c.bind(personDn(people.alice), people.alice.password);
        binds++;
      }
      await c.unbind();
    }),
  );
  return binds / seconds;
}

/** The backend alone, in this process: what the directory work of one sign-in costs without HTTP or SQL. */
async function backendLoop(config: Record<string, unknown>): Promise<number> {
  const backend = await ldapPlugin.create(ldapPlugin.configSchema.parse(config), { id: 'corp', logger: pino({ level: 'warn' }), db: undefined as never });
  const until = Date.now() + seconds * 1000;
  let checks = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < until) {
        if (!(await backend.checkPassword('alice', people.alice.password)).validPassword) throw new Error('alice refused');
        checks++;
      }
    }),
  );
  await backend.close?.();
  return checks / seconds;
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not come up`);
}

const slapd = await startSlapd();
const work = mkdtempSync(join(tmpdir(), 'latchkey-bench-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const ldapConfig = ldapBackendConfig(slapd, { poolSize: 8 });
const config = ldapChain(ldapConfig);
writeFileSync(join(work, 'latchkey.config.yaml'), JSON.stringify(config)); // JSON is YAML
// BENCH_NODE_OPTIONS=--cpu-prof profiles the server.
const server = spawn('node', [...(process.env.BENCH_NODE_OPTIONS?.split(' ').filter(Boolean) ?? []), '--import', 'tsx', 'src/main.ts'], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    LATCHKEY_CONFIG: join(work, 'latchkey.config.yaml'),
    DATABASE_URL: `sqlite:${join(work, 'bench.db')}`,
    LATCHKEY_ADMIN_PASSWORD: 'bench-admin-password',
    LATCHKEY_SECRET: 'bench-secret-bench-secret-bench-secret-00',
  },
  stdio: 'ignore',
});
try {
  await waitFor(`${base}/healthz`);
  const post = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body) }).then((r) => r.json() as Promise<Record<string, any>>);
  const admin = await post('/oauth/v20/token', { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'bench-admin-password' });
  const reg = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.access_token}` },
    body: JSON.stringify({ query: 'mutation { registerClient(input: { name: "bench", redirectUris: [], grantTypes: [PASSWORD], scopes: ["openid", "profile"] }) { client { clientId } clientSecret } }' }),
  }).then((r) => r.json() as Promise<any>);
  const { client, clientSecret } = reg.data.registerClient;
  const probe = await post('/oauth/v20/token', { grant_type: 'password', client_id: client.clientId, client_secret: clientSecret, username: 'alice', password: people.alice.password });
  if (!probe.access_token) throw new Error(`password grant failed: ${JSON.stringify(probe)}`);

  const lua = join(work, 'grant.lua');
  const body = new URLSearchParams({ grant_type: 'password', client_id: client.clientId, client_secret: clientSecret, username: 'alice', password: people.alice.password });
  writeFileSync(lua, `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/x-www-form-urlencoded"\nwrk.body = "${body}"\n`);

  const ceiling = await bindLoop(slapd.url);
  const backendOnly = await backendLoop(ldapConfig);
  const out = execFileSync('wrk', ['-t2', `-c${connections}`, `-d${seconds}s`, '-s', lua, `${base}/oauth/v20/token`]).toString();
  const grants = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? '0';

  console.log(`machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; ${seconds} s, ${connections} connections; SQLite; slapd ${slapd.url}`);
  console.log(`plain binds (ldapts, ceiling):  ${ceiling.toFixed(0)} /s`);
  console.log(`LDAP backend alone (4 directory operations per sign-in): ${backendOnly.toFixed(0)} /s`);
  console.log(`password grants through LDAP:   ${grants.toFixed(0)} /s   (non-2xx: ${non2xx})`);
  console.log(`ratio: ${((grants / ceiling) * 100).toFixed(0)} % of the ceiling`);
} finally {
  server.kill('SIGTERM');
  await slapd.destroy();
  rmSync(work, { recursive: true, force: true });
}
