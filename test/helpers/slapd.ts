import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { Attribute, Change, Client, Control, InvalidCredentialsError } from 'ldapts';
import { join } from 'node:path';
import { BASE_DN, entries, GROUPS, PEOPLE, SERVICE_DN, SERVICE_PASSWORD, toLdif, type LdifEntry } from '../fixtures/ldap/directory.ts';
import { freePort } from './ports.ts';

/**
 * A throwaway OpenLDAP server (Debian's slapd, never the system service) on free loopback ports, with
 * a plain listener and an ldaps:// one whose certificate a generated CA signed. A missing slapd fails
 * the tests that need it: they are never skipped.
 */
export interface Slapd {
  url: string;
  ldapsUrl: string;
  /** PEM of the CA that signed the server's certificate. */
  ca: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its sockets but answers nothing (a hung directory). */
  pause(): void;
  resume(): void;
  /** Replaces one attribute of an entry (no values: removes it), as the directory's administrator. */
  modify(dn: string, attr: string, values: string[], o?: { relax?: boolean }): Promise<void>;
  /** Adds an entry, as the directory's administrator. */
  add(entry: LdifEntry): Promise<void>;
  destroy(): Promise<void>;
}

// Attributes of Active Directory's schema, so the AD settings run against a real server: the OIDs are
// AD's own; objectGUID is binary (octet string) as there.
const AD_SCHEMA = `
attributetype ( 1.2.840.113556.1.4.221 NAME 'sAMAccountName' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.2 NAME 'objectGUID' EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.4203.666.11.1 NAME 'latchkeyAdUser' AUXILIARY MAY ( sAMAccountName $ objectGUID $ userAccountControl ) )
`;

const ROOT_DN = `cn=admin,${BASE_DN}`;
const ROOT_PASSWORD = 'directory-admin-pw';

let tlsMaterial: { dir: string; ca: string } | undefined;

/** A CA and a server certificate for 127.0.0.1 / localhost, made once per test file. */
function tls(): { dir: string; ca: string } {
  if (tlsMaterial) return tlsMaterial;
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-tls-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Latchkey Test CA',
  );
  run(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'key.pem',
    '-out',
    'server.csr',
    '-subj',
    '/CN=localhost',
  );
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  run(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'cert.pem',
    '-days',
    '2',
    '-extfile',
    'san.ext',
  );
  tlsMaterial = { dir, ca: readFileSync(join(dir, 'ca.pem'), 'utf8') };
  return tlsMaterial;
}

function waitForPort(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`slapd did not listen on ${port} within ${ms} ms`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

export interface SlapdOptions {
  /**
   * Loads the ppolicy overlay with a default policy that enforces lockouts (`pwdLockout`), so that an
   * administrator's `pwdAccountLockedTime` refuses the account's binds, as in a real deployment.
   */
  ppolicy?: boolean;
  /**
   * With `ppolicy`: more attributes of the default policy (`pwdMinLength`, `pwdInHistory`, `pwdMaxAge`,
   * `pwdMustChange`, `pwdExpireWarning`, `pwdGraceAuthNLimit`...), for the password lifecycle (docs/identity-backends.md).
   */
  policy?: Record<string, string>;
  /** The service account may write passwords (a reset, docs/identity-backends.md); by default only their owner may. */
  serviceWritesPasswords?: boolean;
  /**
   * The service account's size limit (slapd's `limits`; a paged search's total too): low, to see a
   * directory sync refuse a partial read; `unlimited`, to read a large directory whole (slapd's own
   * default is 500 entries).
   */
  serviceSizeLimit?: number | 'unlimited';
}

/** The default password policy of `ppolicy: true`: only lockouts an administrator sets. */
export const PPOLICY_DN = `cn=default-policy,ou=services,${BASE_DN}`;
const policyEntry = (extra: Record<string, string> = {}): LdifEntry => ({
  dn: PPOLICY_DN,
  attrs: { objectClass: ['device', 'pwdPolicy'], cn: 'default-policy', pwdAttribute: 'userPassword', pwdLockout: 'TRUE', ...extra },
});

export async function startSlapd(options: SlapdOptions = {}): Promise<Slapd> {
  const { dir: tlsDir, ca } = tls();
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-slapd-'));
  mkdirSync(join(dir, 'data'));
  const [port, tlsPort] = [await freePort(), await freePort()];
  writeFileSync(join(dir, 'ad.schema'), AD_SCHEMA);
  writeFileSync(
    join(dir, 'slapd.conf'),
    `include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
include ${dir}/ad.schema
pidfile ${dir}/slapd.pid
TLSCACertificateFile ${tlsDir}/ca.pem
TLSCertificateFile ${tlsDir}/cert.pem
TLSCertificateKeyFile ${tlsDir}/key.pem
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
${options.ppolicy ? 'moduleload ppolicy\n' : ''}# Accept an "unauthenticated bind" (a DN with an empty password) the way some servers do, so the tests
# prove that Latchkey never sends one.
allow bind_anon_dn
database mdb
maxsize 104857600
suffix "${BASE_DN}"
rootdn "${ROOT_DN}"
rootpw ${ROOT_PASSWORD}
directory ${dir}/data
index objectClass eq
index uid,cn,mail,member,sAMAccountName eq
${options.serviceSizeLimit === undefined ? '' : `limits dn.exact="${SERVICE_DN}" size=${options.serviceSizeLimit}\n`}access to attrs=userPassword${options.serviceWritesPasswords ? ` by dn.exact="${SERVICE_DN}" write` : ''} by self write by anonymous auth by * none
${
  options.serviceWritesPasswords
    ? `# A reset clears ppolicy's must-change mark (plugins/ldap/password-writes.ts).
access to attrs=pwdReset by dn.exact="${SERVICE_DN}" write by users read by * none
`
    : ''
}access to * by users read by * none
${options.ppolicy ? `overlay ppolicy\nppolicy_default "${PPOLICY_DN}"\n` : ''}`,
  );
  writeFileSync(join(dir, 'directory.ldif'), toLdif(options.ppolicy ? [...entries(), policyEntry(options.policy)] : entries()));
  // Loaded offline so every server built from the data has the same entryUUIDs, as replicas would.
  execFileSync('slapadd', ['-q', '-f', join(dir, 'slapd.conf'), '-l', join(dir, 'directory.ldif')], { stdio: 'pipe' });

  let child: ChildProcess | undefined;
  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return; // already running
    child = spawn('slapd', ['-d', '0', '-f', join(dir, 'slapd.conf'), '-h', `ldap://127.0.0.1:${port}/ ldaps://127.0.0.1:${tlsPort}/`], {
      stdio: 'ignore',
    });
    const exited = new Promise<never>((_, reject) => child!.once('exit', (code) => reject(new Error(`slapd exited with ${code}`))));
    exited.catch(() => undefined);
    await Promise.race([Promise.all([waitForPort(port, 10_000), waitForPort(tlsPort, 10_000)]), exited]);
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const gone = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGCONT');
    c.kill('SIGTERM');
    await gone;
  };
  await start();
  return {
    url: `ldap://127.0.0.1:${port}`,
    ldapsUrl: `ldaps://127.0.0.1:${tlsPort}`,
    ca,
    start,
    stop,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    async modify(dn, attr, values, o = {}) {
      const client = new Client({ url: `ldap://127.0.0.1:${port}`, timeout: 5000 });
      try {
        await client.bind(ROOT_DN, ROOT_PASSWORD);
        const change = new Change({ operation: 'replace', modification: new Attribute({ type: attr, values }) });
        // The Relax Rules control lets the administrator set ppolicy's own attributes (`pwdChangedTime`).
        await client.modify(dn, change, o.relax ? new Control('1.3.6.1.4.1.4203.666.5.12', { critical: true }) : undefined);
      } finally {
        await client.unbind();
      }
    },
    async add(entry) {
      const client = new Client({ url: `ldap://127.0.0.1:${port}`, timeout: 5000 });
      try {
        await client.bind(ROOT_DN, ROOT_PASSWORD);
        await client.add(entry.dn, entry.attrs as Record<string, string | string[]>);
      } finally {
        await client.unbind();
      }
    },
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Server settings for a chain of the LDAP backend `corp` in front of the database backend `local`. */
export const ldapChain = (config: Record<string, unknown>) => ({
  identity: {
    backends: [
      { id: 'corp', plugin: 'ldap', config },
      { id: 'local', plugin: 'database' },
    ],
  },
});

/** The `ldap` backend config that fits the test directory (OpenLDAP style). */
export function ldapBackendConfig(slapd: Pick<Slapd, 'url'>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: slapd.url,
    bindDN: SERVICE_DN,
    bindPassword: SERVICE_PASSWORD,
    timeoutMs: 2000,
    userSearch: { baseDN: PEOPLE, filter: '(&(objectClass=inetOrgPerson)(uid={username}))' },
    groupSearch: { baseDN: GROUPS },
    adminGroups: ['latchkey-admins'],
    ...extra,
  };
}

/** Whether the directory itself takes `password` for `dn`, asked by a plain bind of its own. */
export async function bindsAs(slapd: Pick<Slapd, 'url'>, dn: string, password: string): Promise<boolean> {
  const c = new Client({ url: slapd.url, timeout: 3000 });
  try {
    await c.bind(dn, password);
    return true;
  } catch (err) {
    if (err instanceof InvalidCredentialsError) return false;
    throw err;
  } finally {
    await c.unbind();
  }
}
