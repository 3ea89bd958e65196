import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'ldapts';
import { rawBind, stopProcess } from './processes.ts';

const run = promisify(execFile);

/**
 * A throwaway Active Directory: Samba 4.17 provisioned as a domain controller in a temp folder (never
 * the system service), listening on 127.0.0.1 only, with a certificate for 127.0.0.1 / localhost that
 * a CA made here signed, so `ldaps://` and StartTLS verify with `tls.ca` like a real AD behind a
 * corporate CA. AD's ports are fixed (389, 636, 3268, 3269): the fixture refuses to start when another
 * process holds one, and jest runs suites one at a time. A missing Samba fails the tests, never skips.
 */
export interface SambaDc {
  readonly baseDN: string;
  /** The DC's smb.conf: `samba-tool … --configfile=<it>` works on its local database (test/helpers/kerberos.ts). */
  readonly configFile: string;
  /** `ldap://127.0.0.1:389`: plain binds are refused there ("transport encryption required"), as in AD. */
  readonly ldapUrl: string;
  readonly ldapsUrl: string;
  /** PEM of the CA that signed the DC's certificate. */
  readonly ca: string;
  /** Runs `fn` with a client bound as the domain's Administrator over ldaps. */
  asAdmin<T>(fn: (client: Client) => Promise<T>): Promise<T>;
  /** One simple bind straight to the DC (no Latchkey): the raw answer, e.g. `…, data 775, …`. */
  rawBind(dn: string, password: string): Promise<string>;
  /**
   * Grants `trusteeDn` the Reset Password extended right on the users under `ouDn` (an inherited ACE,
   * as docs/identity-backends.md's `dsacls … /I:S /G "…:CA;Reset Password;user"` makes), with samba-tool on the
   * local database: what an operator delegates to Latchkey's service account for resets.
   */
  grantResetPassword(trusteeDn: string, ouDn: string): Promise<void>;
  /**
   * An LDIF modify written raw into the domain partition's file while the DC is stopped (then started
   * again): below every Samba module, for what AD refuses even to the `relax` control, such as a
   * `pwdLastSet` set back in time to stage an expired password.
   */
  modifyRaw(ldif: string): Promise<void>;
  /**
   * Entries added in one batch with `ldbadd` while the DC is stopped (then started again), through
   * Samba's modules as at provisioning: thousands of users in seconds, where LDAP adds take minutes.
   */
  addOffline(ldif: string): Promise<void>;
  /** SIGTERM: Samba closes every connection and stops listening, as a DC that goes down does. */
  stop(): Promise<void>;
  /** Starts it again and resolves once it answers binds. */
  start(): Promise<void>;
  destroy(): Promise<void>;
}

export const AD_REALM = 'LATCHKEY.TEST';
export const AD_BASE_DN = 'DC=latchkey,DC=test';
const ADMIN_DN = `CN=Administrator,CN=Users,${AD_BASE_DN}`;
const ADMIN_PASSWORD = 'Adm1n-Latchkey-Test!';
const PORTS = [389, 636, 3268, 3269];
/** The KDC's port, fixed too, when the DC runs one (`{ kdc: true }`). */
const KDC_PORT = 88;
/** The "Reset Password" (User-Force-Change-Password) extended right, and the schema GUID of `user`. */
const RESET_PASSWORD_RIGHT = '00299570-246d-11d0-a768-00aa006e0529';
const USER_CLASS = 'bf967aba-0de6-11d0-a285-00aa003049e2';

/** A CA and a server certificate for 127.0.0.1 / localhost; Samba wants its key readable by its owner only. */
async function makeCertificate(dir: string): Promise<void> {
  mkdirSync(dir);
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Latchkey Test AD CA');
  await openssl('req', ...ec, '-keyout', 'key.pem', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  await openssl(
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
  chmodSync(join(dir, 'key.pem'), 0o600);
}

/** Fails with a message naming the port when something already listens on it (a system slapd, say). */
async function assertPortsFree(ports: number[]): Promise<void> {
  for (const port of ports) {
    await new Promise<void>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new Error(
            `the Samba AD fixture needs 127.0.0.1:${port}, which is taken (${err.code}); stop what listens there (a system slapd or samba?)`,
          ),
        ),
      );
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
    });
  }
}

/**
 * Provisions the domain (about 6-10 s, most of the fixture's cost), then loads `ldif` offline with
 * `ldbadd` before the first start: bulk entries go in several times faster than over LDAP.
 */
async function provision(dir: string, tls: string, ldif: string, kdc: boolean): Promise<string> {
  const options = {
    interfaces: '127.0.0.1',
    'bind interfaces only': 'yes',
    // Only the LDAP server, and the KDC when asked (the Kerberos tests): no SMB or RPC ports to collide with anything.
    'server services': kdc ? 'ldap, kdc' : 'ldap',
    'log file': join(dir, 'log.%m'),
    'pid directory': join(dir, 'run'),
    'ncalrpc dir': join(dir, 'ncalrpc'),
    'winbindd socket directory': join(dir, 'winbindd'),
    'tls keyfile': join(tls, 'key.pem'),
    'tls certfile': join(tls, 'cert.pem'),
    'tls cafile': join(tls, 'ca.pem'),
  };
  await run('samba-tool', [
    'domain',
    'provision',
    '--use-rfc2307',
    `--realm=${AD_REALM}`,
    '--domain=LATCHKEY',
    '--server-role=dc',
    '--dns-backend=NONE',
    `--adminpass=${ADMIN_PASSWORD}`,
    `--targetdir=${dir}`,
    '--host-ip=127.0.0.1',
    '--host-name=dc1',
    ...Object.entries(options).map(([k, v]) => `--option=${k} = ${v}`),
  ]).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT')
      throw new Error("samba-tool not found: install Debian's samba samba-ad-dc krb5-user winbind ldb-tools (.ci/run does)");
    throw err;
  });
  for (const sub of ['run', 'cache']) mkdirSync(join(dir, sub), { recursive: true });
  const conf = join(dir, 'etc', 'smb.conf');
  if (ldif) {
    writeFileSync(join(dir, 'content.ldif'), ldif);
    await run('ldbadd', ['--nosync', `--configfile=${conf}`, '-H', join(dir, 'private', 'sam.ldb'), join(dir, 'content.ldif')], {
      maxBuffer: 1 << 24,
    });
  }
  return conf;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startSambaDc(ldif = '', options: { kdc?: boolean } = {}): Promise<SambaDc> {
  const kdc = options.kdc ?? false;
  await assertPortsFree(kdc ? [...PORTS, KDC_PORT] : PORTS);
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-samba-'));
  let child: ChildProcess | undefined;
  const tlsDir = join(dir, 'tls');
  let ca = '';
  const logFile = join(dir, 'samba.log');
  const logTail = () => readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n');
  let conf = '';

  const adminClient = async () => {
    // strictDN off: AD's extended DNs (`<GUID=…>`) are valid search bases.
    const client = new Client({ url: 'ldaps://127.0.0.1:636', timeout: 10_000, connectTimeout: 2000, tlsOptions: { ca }, strictDN: false });
    try {
      await client.bind(ADMIN_DN, ADMIN_PASSWORD);
      return client;
    } catch (err) {
      await client.unbind().catch(() => undefined);
      throw err;
    }
  };

  const stop = async () => {
    const c = child;
    child = undefined;
    await stopProcess(c, 10_000);
  };

  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return; // already running
    const log = openSync(logFile, 'a');
    // `-M single`: one process for every service, so SIGTERM to it leaves no forked children behind.
    const c = spawn('samba', ['-s', conf, '-i', '-M', 'single', '--debug-stdout', '-d', '1'], { stdio: ['ignore', log, log] });
    closeSync(log);
    child = c;
    let exited = false;
    c.once('exit', () => (exited = true));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (exited) {
        child = undefined;
        throw new Error(`samba exited during start:\n${logTail()}`);
      }
      try {
        await (await adminClient()).unbind();
        return;
      } catch (err) {
        if (Date.now() > deadline) {
          await stop();
          throw new Error(`samba did not answer binds within 30 s (${(err as Error).message}):\n${logTail()}`);
        }
        await sleep(100);
      }
    }
  };

  try {
    await makeCertificate(tlsDir);
    ca = readFileSync(join(tlsDir, 'ca.pem'), 'utf8');
    conf = await provision(dir, tlsDir, ldif, kdc);
    await start();
  } catch (err) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    baseDN: AD_BASE_DN,
    configFile: conf,
    ldapUrl: 'ldap://127.0.0.1:389',
    ldapsUrl: 'ldaps://127.0.0.1:636',
    ca,
    async asAdmin(fn) {
      const client = await adminClient();
      try {
        return await fn(client);
      } finally {
        await client.unbind().catch(() => undefined);
      }
    },
    rawBind: (dn, password) => rawBind(new Client({ url: 'ldaps://127.0.0.1:636', timeout: 5000, tlsOptions: { ca } }), dn, password),
    async grantResetPassword(trusteeDn, ouDn) {
      const sam = join(dir, 'private', 'sam.ldb');
      const found = await run('ldbsearch', [`--configfile=${conf}`, '-H', sam, '-b', trusteeDn, '-s', 'base', 'objectSid']);
      const sid = /^objectSid: (S-[0-9-]+)$/m.exec(found.stdout)?.[1];
      if (!sid) throw new Error(`no objectSid for ${trusteeDn}:\n${found.stdout}`);
      // OA: object ACE; CIIO: inherited by children only; CR: control access; the right, then the `user` class.
      const ace = `(OA;CIIO;CR;${RESET_PASSWORD_RIGHT};${USER_CLASS};${sid})`;
      await run('samba-tool', ['dsacl', 'set', `--configfile=${conf}`, '-H', sam, `--objectdn=${ouDn}`, `--sddl=${ace}`]);
    },
    async modifyRaw(ldif) {
      const file = join(dir, 'modify.ldif');
      writeFileSync(file, ldif);
      await stop();
      try {
        // The partition's own file has no @MODULES: ldbmodify writes it plainly (keeping its indexes).
        await run('ldbmodify', ['-H', `tdb://${join(dir, 'private', 'sam.ldb.d', `${AD_BASE_DN.toUpperCase()}.ldb`)}`, file]);
      } finally {
        await start();
      }
    },
    async addOffline(ldif) {
      const file = join(dir, 'add.ldif');
      writeFileSync(file, ldif);
      await stop();
      try {
        await run('ldbadd', ['--nosync', `--configfile=${conf}`, '-H', join(dir, 'private', 'sam.ldb'), file], { maxBuffer: 1 << 24 });
      } finally {
        await start();
      }
    },
    stop,
    start,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
