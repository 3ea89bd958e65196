/**
 * Kerberos for the tests of desktop single sign-on (docs/identity-backends.md "Desktop single sign-on"): the KDC of the AD
 * suite's Samba domain controller, a service principal and its keytab made with `samba-tool`, a
 * krb5.conf pointing at the DC, and users who `kinit` with a password into a ticket cache of their own.
 *
 * How to use it (test/ad/kerberos.ts does all of this):
 *
 *   const dc = await startSambaDc(ldif, { kdc: true });          // the DC with its KDC on 127.0.0.1:88
 *   const krb = await kerberosFixture(dc);                       // SPN HTTP/sso.latchkey.test, keytab, krb5.conf (once per DC)
 *   const port = await freePort();
 *   const server = await startTestServer(kind, {
 *     ...krb.serverAt(port),                                     // PUBLIC_URL http://sso.latchkey.test:<port>
 *     ...ldapChain(adConfig({ kerberos: krb.backendConfig() })), // the LDAP backend's `kerberos`
 *   });
 *   await krb.user('carol', 'Carol-Pw-1!');                      // a directory user (OU=Latchkey People)
 *   const tickets = await krb.kinit('carol', 'Carol-Pw-1!');      // a ticket cache: tickets.env for any client
 *   await krb.curl(tickets, `${server.publicUrl}/oauth/v20/authorize?...`); // curl --negotiate -u :
 *   spawn('chromium', [...], { env: { ...process.env, ...tickets.env } })   // a browser sees the same cache
 *
 * - The SPN's host, `sso.latchkey.test` (`KERBEROS_HOST`), is in the DC's realm and resolves to
 *   127.0.0.1: the fixture adds it to /etc/hosts once (idempotent; CI runs as root). Clients must ask
 *   for exactly that name: the krb5.conf turns off DNS canonicalisation and reverse lookups, and a
 *   browser needs the same (Chromium: `--auth-server-allowlist=sso.latchkey.test` and
 *   `--disable-auth-negotiate-cname-lookup`).
 * - `tickets.env` (`KRB5_CONFIG`, `KRB5CCNAME`) is what a client process needs; the server side needs
 *   the keytab, which the server's `kerberos.keytab` names. Jest's sandbox gives each test file a copy
 *   of `process.env`, which the GSSAPI library (C, `getenv`) never sees: `kerberosFixture` writes
 *   `KRB5_CONFIG`, `KRB5_KTNAME` and `KRB5RCACHEDIR` into the real environment of the jest process
 *   (a worker sharing it), which an in-process server's acceptor reads. A Latchkey process of its own
 *   (test/helpers/latchkey-process.ts) sets them itself from its config, as in production.
 * - `token()` makes a Negotiate token without any HTTP (Python's `kerberos` module, the GSSAPI client
 *   requests-kerberos uses), optionally at a faked time (`faketime`), for the refusal tests.
 * - Debian packages: samba, krb5-user (kinit, klist), curl, python3-requests-kerberos, faketime (.ci/run).
 */
import { execFile, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { SHARE_ENV, Worker } from 'node:worker_threads';
import { Attribute, Change } from 'ldapts';
import { AD_BASE_DN, AD_REALM, type SambaDc } from './samba.ts';

const run = promisify(execFile);

/** The host of PUBLIC_URL and of the service principal: a name in the DC's realm, at 127.0.0.1. */
export const KERBEROS_HOST = 'sso.latchkey.test';
export const SERVICE_PRINCIPAL = `HTTP/${KERBEROS_HOST}@${AD_REALM}`;
/** Debian's python3 (python3-requests-kerberos), whatever python a PATH puts first. */
export const PYTHON = '/usr/bin/python3';
const FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
/** Where the fixture's users live: the OU the AD suite's `userSearch.baseDN` reads. */
const PEOPLE_OU = 'OU=Latchkey People';

/** A ticket cache of one user: what a client process needs in its environment. */
export interface Tickets {
  principal: string;
  env: { KRB5_CONFIG: string; KRB5CCNAME: string };
  /** The cache's tickets as `klist` shows them (times in UTC). */
  list(): Promise<string>;
}

/** The answer curl saw last (after the Negotiate round trip when there was one), and every status on the way. */
export interface CurlAnswer {
  statuses: number[];
  status: number;
  /** By lower-case name; a header sent several times (Set-Cookie) has its values one a line. */
  headers: Record<string, string>;
  body: string;
}

export interface KerberosFixture {
  /** The service principal's keytab (exported with `samba-tool domain exportkeytab`). */
  keytab: string;
  /** The krb5.conf every client of the tests uses (the DC's KDC at 127.0.0.1:88). */
  krb5Conf: string;
  /** The LDAP backend's `kerberos` config. */
  backendConfig(extra?: Record<string, unknown>): Record<string, unknown>;
  /** Server config overrides: listening on `port`, with PUBLIC_URL at the SPN's host. */
  serverAt(port: number): { port: number; publicUrl: string };
  /**
   * A user in the directory (samba-tool user create), under the OU the AD suite's userSearch reads;
   * with `outside`, in CN=Users, where the KDC knows them and Latchkey's user search does not.
   */
  user(name: string, password: string, options?: { outside?: boolean }): Promise<void>;
  /**
   * `kinit` with the password on stdin into a cache of its own. `lifetime` (kinit -l), `service`
   * (kinit -S: a service ticket straight from the AS exchange), `fakeOffset` (seconds, faketime) with
   * the KDC's time sync off, for tickets whose times the KDC set from a wrong client clock.
   */
  kinit(name: string, password: string, options?: { lifetime?: string; service?: string; fakeOffset?: number }): Promise<Tickets>;
  /** Another service principal `HTTP/<host>` on an account of its own (a ticket for another service). */
  otherService(host: string): Promise<string>;
  /**
   * A Negotiate (SPNEGO) token for `service` (`HTTP@host`) from the cache, as a browser would send
   * it; `fakeTime` runs the client at that time (`faketime`: `+10m`, or `@2026-01-01 10:00:00`).
   */
  token(tickets: Tickets, options?: { service?: string; fakeTime?: string }): Promise<string>;
  /** `curl --negotiate -u :` (no redirect followed): what it saw. */
  curl(tickets: Tickets | undefined, url: string, args?: string[]): Promise<CurlAnswer>;
  /** `requests` with `requests_kerberos.HTTPKerberosAuth` (no redirect followed): the last answer. */
  python(tickets: Tickets, url: string): Promise<{ status: number; headers: Record<string, string> }>;
  destroy(): Promise<void>;
}

/**
 * Writes variables into the process's real environment. Jest hands each test file a copy of
 * `process.env`; a worker thread given `SHARE_ENV` writes the one C code (`getenv`) reads.
 */
export async function setRealEnv(vars: Record<string, string>): Promise<void> {
  const worker = new Worker(`for (const [k, v] of Object.entries(require('worker_threads').workerData)) process.env[k] = v;`, {
    eval: true,
    env: SHARE_ENV,
    workerData: vars,
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`env worker exited with ${code}`))));
  });
  Object.assign(process.env, vars);
}

/** `KERBEROS_HOST` at 127.0.0.1 in /etc/hosts, added once. */
function ensureHostEntry(): void {
  const hosts = readFileSync('/etc/hosts', 'utf8');
  if (hosts.split('\n').some((line) => line.split(/\s+/).slice(1).includes(KERBEROS_HOST))) return;
  try {
    appendFileSync('/etc/hosts', `${hosts.endsWith('\n') ? '' : '\n'}127.0.0.1 ${KERBEROS_HOST}\n`);
  } catch (err) {
    throw new Error(`the Kerberos tests need ${KERBEROS_HOST} at 127.0.0.1 in /etc/hosts, and cannot add it (run as root): ${err}`);
  }
}

function krb5Conf(timeSync: boolean): string {
  return `[libdefaults]
  default_realm = ${AD_REALM}
  dns_lookup_kdc = false
  dns_lookup_realm = false
  dns_canonicalize_hostname = false
  rdns = false
  kdc_timesync = ${timeSync ? 1 : 0}
[realms]
  ${AD_REALM} = {
    kdc = 127.0.0.1:88
  }
[domain_realm]
  .latchkey.test = ${AD_REALM}
  latchkey.test = ${AD_REALM}
`;
}

/** Runs a command with `input` on stdin; rejects with its output when it fails. */
function runWithInput(command: string, args: string[], input: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${out}`)),
    );
    child.stdin.end(input);
  });
}

/** libfaketime's settings; an absolute `@…` time is read in UTC. */
const fakeEnv = (fakeTime: string): NodeJS.ProcessEnv => ({
  LD_PRELOAD: FAKETIME_LIB,
  FAKETIME: fakeTime,
  FAKETIME_DONT_FAKE_MONOTONIC: '1',
  TZ: 'UTC',
});

/** The script Python runs: a token (`token`) or a request through requests-kerberos (`get`). */
const PY_TOKEN = `import sys, kerberos
rc, ctx = kerberos.authGSSClientInit(sys.argv[1], mech_oid=kerberos.GSS_MECH_OID_SPNEGO)
kerberos.authGSSClientStep(ctx, '')
print(kerberos.authGSSClientResponse(ctx))
`;
const PY_GET = `import sys, json, requests
from requests_kerberos import HTTPKerberosAuth, OPTIONAL
r = requests.get(sys.argv[1], auth=HTTPKerberosAuth(mutual_authentication=OPTIONAL), allow_redirects=False, timeout=30)
print(json.dumps({'status': r.status_code, 'headers': dict(r.headers)}))
`;

/** Headers and status of each response in curl's `-D` dump, the last one's body beside it. */
function parseCurl(dump: string, body: string): CurlAnswer {
  const blocks = dump.split(/\r?\n\r?\n/).filter((b) => b.startsWith('HTTP/'));
  const statuses = blocks.map((b) => Number(b.split(' ')[1]));
  const headers: Record<string, string> = {};
  for (const line of (blocks.at(-1) ?? '').split(/\r?\n/).slice(1)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).toLowerCase();
    // A header sent several times (Set-Cookie) keeps each value, one a line.
    headers[name] = headers[name] === undefined ? line.slice(i + 1).trim() : `${headers[name]}\n${line.slice(i + 1).trim()}`;
  }
  return { statuses, status: statuses.at(-1) ?? 0, headers, body };
}

const fixtures = new WeakMap<SambaDc, Promise<KerberosFixture>>();

/**
 * The fixture of `dc`, made once per DC and shared by every test module that asks (the service
 * account and its SPN exist once in a domain).
 */
export function kerberosFixture(dc: SambaDc): Promise<KerberosFixture> {
  let made = fixtures.get(dc);
  if (!made) {
    made = makeFixture(dc);
    fixtures.set(dc, made);
    made.catch(() => fixtures.delete(dc));
  }
  return made;
}

async function makeFixture(dc: SambaDc): Promise<KerberosFixture> {
  ensureHostEntry();
  // Inside the DC's own temp folder: gone with it (`dc.destroy()`), whichever module used the fixture last.
  const dir = mkdtempSync(join(dirname(dirname(dc.configFile)), 'krb5-'));
  const conf = join(dir, 'krb5.conf');
  const noSync = join(dir, 'krb5-nosync.conf');
  writeFileSync(conf, krb5Conf(true));
  writeFileSync(noSync, krb5Conf(false));
  const keytab = join(dir, 'http.keytab');
  const rcache = join(dir, 'rcache');
  mkdirSync(rcache, { mode: 0o700 });
  const samba = (...args: string[]) => run('samba-tool', [...args, `--configfile=${dc.configFile}`]);
  let services = 0;

  /** An account holding `HTTP/<host>`, AES keys only (as `ktpass /crypto AES256-SHA1` makes), its keytab exported. */
  async function serviceAccount(host: string, file: string): Promise<string> {
    const account = `svc-http-${++services}`;
    const principal = `HTTP/${host}@${AD_REALM}`;
    await samba('user', 'create', account, `Svc-Http-${services}-${Date.now()}!`);
    await dc.asAdmin((c) =>
      c.modify(`CN=${account},CN=Users,${AD_BASE_DN}`, [
        new Change({ operation: 'replace', modification: new Attribute({ type: 'msDS-SupportedEncryptionTypes', values: ['24'] }) }),
      ]),
    );
    await samba('spn', 'add', `HTTP/${host}`, account);
    await samba('domain', 'exportkeytab', file, `--principal=${principal}`);
    return principal;
  }

  await serviceAccount(KERBEROS_HOST, keytab);
  // For a server in this process (see the header): the same settings its acceptor would set itself.
  await setRealEnv({ KRB5_CONFIG: conf, KRB5_KTNAME: keytab, KRB5RCACHEDIR: rcache });
  let caches = 0;

  const fixture: KerberosFixture = {
    keytab,
    krb5Conf: conf,
    backendConfig: (extra = {}) => ({ keytab, servicePrincipal: SERVICE_PRINCIPAL, realm: AD_REALM, ...extra }),
    serverAt: (port) => ({ port, publicUrl: `http://${KERBEROS_HOST}:${port}` }),

    async user(name, password, options = {}) {
      const ou = options.outside ? [] : [`--userou=${PEOPLE_OU}`];
      await samba('user', 'create', name, password, ...ou, `--mail-address=${name}@latchkey.test`);
    },

    async kinit(name, password, options = {}) {
      const principal = name.includes('@') ? name : `${name}@${AD_REALM}`;
      const cache = `FILE:${join(dir, `cc-${++caches}`)}`;
      // With a faked clock the KDC's time must not be taken over (kdc_timesync), or the faking is undone.
      const env = { KRB5_CONFIG: options.fakeOffset === undefined ? conf : noSync, KRB5CCNAME: cache };
      const args = [...(options.lifetime ? ['-l', options.lifetime] : []), ...(options.service ? ['-S', options.service] : []), principal];
      const fake = options.fakeOffset === undefined ? {} : fakeEnv(`${options.fakeOffset >= 0 ? '+' : ''}${options.fakeOffset}s`);
      await runWithInput('kinit', args, `${password}\n`, { ...process.env, ...env, ...fake });
      const tickets: Tickets = {
        principal,
        env,
        list: async () => (await run('klist', [], { env: { ...process.env, ...tickets.env, TZ: 'UTC' } })).stdout,
      };
      return tickets;
    },

    otherService: (host) => serviceAccount(host, join(dir, `${host}.keytab`)),

    async token(tickets, options = {}) {
      const env = { ...process.env, ...tickets.env, ...(options.fakeTime ? fakeEnv(options.fakeTime) : {}) };
      const { stdout } = await run(PYTHON, ['-c', PY_TOKEN, options.service ?? `HTTP@${KERBEROS_HOST}`], { env });
      return stdout.trim();
    },

    async curl(tickets, url, args = []) {
      const dump = join(dir, `curl-${++caches}.headers`);
      const bodyFile = join(dir, `curl-${caches}.body`);
      const negotiate = tickets ? ['--negotiate', '-u', ':'] : [];
      await run('curl', ['-sS', ...negotiate, '-D', dump, '-o', bodyFile, ...args, url], { env: { ...process.env, ...tickets?.env } });
      return parseCurl(readFileSync(dump, 'utf8'), readFileSync(bodyFile, 'utf8'));
    },

    async python(tickets, url) {
      const { stdout } = await run(PYTHON, ['-c', PY_GET, url], { env: { ...process.env, ...tickets.env } });
      const answer = JSON.parse(stdout) as { status: number; headers: Record<string, string> };
      return { status: answer.status, headers: Object.fromEntries(Object.entries(answer.headers).map(([k, v]) => [k.toLowerCase(), v])) };
    },

    async destroy() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}
