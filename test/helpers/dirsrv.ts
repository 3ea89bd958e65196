import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Attribute, Change, Client } from 'ldapts';
import { BASE_DN, groupDn, groups, people, PEOPLE, personDn, SERVICE_DN, SERVICE_PASSWORD } from '../fixtures/ldap/directory.ts';
import { freePort } from './ports.ts';
import { rawBind, stopProcess } from './processes.ts';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A throwaway 389 Directory Server (Debian's `389-ds-base`), made with `dscreate from-file` from a
 * private defaults file, so that every file it writes (config, database, logs, certificates, pid file,
 * ldapi socket) lives in one temp folder and nothing of the system's `/etc/dirsrv` or systemd is used.
 * It listens on 127.0.0.1 only, on free ports, from its very first start. It holds the test directory
 * with the memberOf plugin on, carol locked (`nsAccountLock`), and a service account whose ACIs name
 * the operational attributes a sign-in reads. A missing 389 DS fails the tests, never skips.
 */
export interface Dirsrv {
  url: string;
  /** `ldaps://localhost:PORT`: the certificate dscreate made names `localhost`. */
  ldapsUrl: string;
  /** PEM of the CA dscreate made, which signed the server's certificate. */
  ca: string;
  /** Replaces one attribute of an entry (none: removes it), as Directory Manager. */
  modify(dn: string, attr: string, values: string[]): Promise<void>;
  /** Adds or removes one value, as Directory Manager. */
  change(dn: string, operation: 'add' | 'delete', attr: string, value: string): Promise<void>;
  /** One simple bind straight to the server (no Latchkey): `success` or the server's message. */
  rawBind(dn: string, password: string): Promise<string>;
  stop(): Promise<void>;
  /** Starts it (again) and resolves once it answers a bind. */
  start(): Promise<void>;
  destroy(): Promise<void>;
}

export const DIRECTORY_MANAGER = 'cn=Directory Manager';
const MANAGER_PASSWORD = 'directory-manager-pw';
/** The 389 DS start can be slow on a busy 2-core CI machine; the wait ends as soon as a bind answers. */
const START_WITHIN_MS = 90_000;

/** What the service account may read: 389 DS leaves operational attributes out of `targetattr="*"`. */
const SERVICE_READS = ['objectClass', 'uid', 'cn', 'sn', 'mail', 'member', 'memberOf', 'entryUUID', 'nsUniqueId', 'nsAccountLock'];

const SYSTEM_DEFAULTS = '/usr/share/dirsrv/inf/defaults.inf';

/** Where the package put its programs (`/usr/sbin` on Debian), which need not be on a test's PATH. */
const sbin = (program: string) =>
  join(/^sbin_dir\s*=\s*(.+)$/m.exec(readFileSync(SYSTEM_DEFAULTS, 'utf8'))?.[1]?.trim() ?? '/usr/sbin', program);

/** The system's defaults.inf with every path that is written to moved into `dir`. */
function privateDefaults(dir: string): string {
  const system = readFileSync(SYSTEM_DEFAULTS, 'utf8');
  const me = userInfo();
  const group = execFileSync('id', ['-gn'], { encoding: 'utf8' }).trim();
  const inst = 'slapd-{instance_name}';
  const override: Record<string, string> = {
    // No systemd in CI containers: dscreate then starts and stops ns-slapd itself.
    with_systemd: '0',
    prefix: dir,
    data_dir: join(dir, 'share'),
    tmp_dir: join(dir, 'tmp'),
    sysconf_dir: join(dir, 'etc'),
    initconfig_dir: join(dir, 'etc', 'default'),
    config_dir: join(dir, 'etc', 'dirsrv', inst),
    schema_dir: join(dir, 'etc', 'dirsrv', inst, 'schema'),
    cert_dir: join(dir, 'etc', 'dirsrv', inst),
    local_state_dir: join(dir, 'var'),
    run_dir: join(dir, 'run'),
    ldapi: join(dir, 'run', `${inst}.socket`),
    pid_file: join(dir, 'run', `${inst}.pid`),
    inst_dir: join(dir, 'lib', inst),
    tmpfiles_d: join(dir, 'tmpfiles.d'),
    lock_dir: join(dir, 'lock', inst),
    log_dir: join(dir, 'log'),
    access_log: join(dir, 'log', 'access'),
    audit_log: join(dir, 'log', 'audit'),
    error_log: join(dir, 'log', 'errors'),
    security_log: join(dir, 'log', 'security'),
    db_dir: join(dir, 'db'),
    db_home_dir: join(dir, 'db'),
    backup_dir: join(dir, 'bak'),
    ldif_dir: join(dir, 'ldif'),
    // Whoever runs the tests (root in CI): the files are theirs, no `dirsrv` user is involved.
    user: me.username,
    group,
  };
  const seen = new Set<string>();
  const lines = system.split('\n').map((line) => {
    const key = /^\s*([a-z_]+)\s*=/.exec(line)?.[1];
    if (!key || !(key in override)) return line;
    seen.add(key);
    return `${key} = ${override[key]}`;
  });
  for (const [key, value] of Object.entries(override)) if (!seen.has(key)) lines.push(`${key} = ${value}`);
  return lines.join('\n');
}

/** Turns a plugin of dscreate's config template on or off. */
function plugin(template: string, cn: string, enabled: boolean): string {
  const entry = new RegExp(`(dn: cn=${cn},cn=plugins,cn=config\n(?:.+\n)*?nsslapd-pluginenabled: )(?:on|off)`, 'i');
  if (!entry.test(template)) throw new Error(`389 DS template-dse.ldif has no plugin "${cn}"`);
  return template.replace(entry, `$1${enabled ? 'on' : 'off'}`);
}

/**
 * dscreate's template of the server config, changed so that the server listens on loopback only from
 * its first start (dscreate starts it during the install) and keeps `memberOf` up to date. The 7-bit
 * check is off: it refuses non-ASCII `uid` values, and the conformance suite signs in a name with one.
 */
function prepareDataDir(dir: string): void {
  const data = join(dir, 'share', 'dirsrv', 'data');
  mkdirSync(data, { recursive: true });
  const system = '/usr/share/dirsrv/data';
  for (const name of readdirSync(system)) if (name !== 'template-dse.ldif') symlinkSync(join(system, name), join(data, name));
  let template = readFileSync(join(system, 'template-dse.ldif'), 'utf8');
  if (!/^nsslapd-port: /m.test(template)) throw new Error('389 DS template-dse.ldif has no nsslapd-port');
  template = template.replace(/^(nsslapd-port: .*)$/m, '$1\nnsslapd-listenhost: 127.0.0.1\nnsslapd-securelistenhost: 127.0.0.1');
  template = plugin(plugin(template, 'MemberOf Plugin', true), '7-bit check', false);
  writeFileSync(join(data, 'template-dse.ldif'), template);
  // The schema and config files dscreate copies from `sysconf_dir`.
  for (const part of ['schema', 'config']) cpSync(join('/etc/dirsrv', part), join(dir, 'etc', 'dirsrv', part), { recursive: true });
  mkdirSync(join(dir, 'tmp'));
}

function waitForPort(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** The test directory as 389 DS holds it: plain inetOrgPerson entries; ids and memberOf are its own. */
function entries(): Array<{ dn: string; attrs: Record<string, string | string[]> }> {
  const reads = SERVICE_READS.join(' || ');
  return [
    {
      dn: BASE_DN,
      attrs: {
        objectClass: ['top', 'domain'],
        dc: 'example',
        // Only the service account reads the tree, and only what a sign-in needs; anonymous gets nothing.
        aci: `(targetattr="${reads}")(version 3.0; acl "latchkey service account"; allow (read, search, compare) userdn="ldap:///${SERVICE_DN}";)`,
      },
    },
    ...['people', 'groups', 'services'].map((ou) => ({
      dn: `ou=${ou},${BASE_DN}`,
      attrs: { objectClass: ['top', 'organizationalUnit'], ou },
    })),
    { dn: SERVICE_DN, attrs: { objectClass: ['top', 'person'], cn: 'latchkey', sn: 'service', userPassword: SERVICE_PASSWORD } },
    ...Object.values(people).map((p) => ({
      dn: personDn(p),
      attrs: {
        objectClass: ['top', 'person', 'organizationalPerson', 'inetOrgPerson'],
        uid: p.uid,
        cn: p.cn,
        sn: p.cn.split(' ').pop()!,
        mail: p.mail,
        userPassword: p.password,
        // The fixture's disabled person (AD's 514) is locked the 389 DS way.
        ...(p.uac & 2 ? { nsAccountLock: 'true' } : {}),
      },
    })),
    // After the people: each group's add makes the memberOf plugin write its members' memberOf.
    ...Object.entries(groups).map(([cn, members]) => ({
      dn: groupDn(cn),
      attrs: { objectClass: ['top', 'groupOfNames'], cn, member: members },
    })),
  ];
}

export async function startDirsrv(): Promise<Dirsrv> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-dirsrv-'));
  const name = `lk${randomBytes(5).toString('hex')}`;
  const [port, tlsPort] = [await freePort(), await freePort()];
  const configDir = join(dir, 'etc', 'dirsrv', `slapd-${name}`);
  const errorsTail = () =>
    existsSync(join(dir, 'log', 'errors'))
      ? readFileSync(join(dir, 'log', 'errors'), 'utf8')
          .split('\n')
          .slice(-15)
          .join('\n')
      : '(no error log)';
  let child: ChildProcess | undefined;

  const manager = async (url = `ldap://127.0.0.1:${port}`) => {
    const client = new Client({ url, timeout: 10_000, connectTimeout: 2000 });
    try {
      await client.bind(DIRECTORY_MANAGER, MANAGER_PASSWORD);
      return client;
    } catch (err) {
      await client.unbind().catch(() => undefined);
      throw err;
    }
  };
  const asManager = async <T>(fn: (c: Client) => Promise<T>): Promise<T> => {
    const client = await manager();
    try {
      return await fn(client);
    } finally {
      await client.unbind().catch(() => undefined);
    }
  };

  const stop = async () => {
    const c = child;
    child = undefined;
    await stopProcess(c, 30_000);
  };

  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return; // already running
    // `-d 0`: in the foreground, so the test owns the process and sees it exit.
    const c = spawn(sbin('ns-slapd'), ['-D', configDir, '-i', join(dir, 'run', `slapd-${name}.pid`), '-d', '0'], { stdio: 'ignore' });
    child = c;
    let exited = false;
    c.once('exit', () => (exited = true));
    const deadline = Date.now() + START_WITHIN_MS;
    for (;;) {
      if (exited) {
        child = undefined;
        throw new Error(`ns-slapd exited during start:\n${errorsTail()}`);
      }
      try {
        // The condition, not a guess: a bind answers on the plain port and the TLS port takes connections.
        await (await manager()).unbind();
        if (await waitForPort(tlsPort)) return;
      } catch (err) {
        if (Date.now() > deadline) {
          await stop();
          throw new Error(`389 DS did not answer a bind within ${START_WITHIN_MS} ms (${(err as Error).message}):\n${errorsTail()}`);
        }
      }
      await sleep(100);
    }
  };

  try {
    mkdirSync(join(dir, 'share', 'dirsrv', 'inf'), { recursive: true });
    writeFileSync(join(dir, 'share', 'dirsrv', 'inf', 'defaults.inf'), privateDefaults(dir));
    prepareDataDir(dir);
    writeFileSync(
      join(dir, 'instance.inf'),
      `[general]
full_machine_name = localhost
strict_host_checking = False
# dscreate stops the server at the end: the fixture runs it in the foreground itself.
start = False

[slapd]
instance_name = ${name}
port = ${port}
secure_port = ${tlsPort}
root_password = ${MANAGER_PASSWORD}
self_sign_cert = True

[backend-userroot]
suffix = ${BASE_DN}
`,
    );
    // PREFIX makes dscreate (lib389) read the private defaults.inf instead of the system's.
    await run(sbin('dscreate'), ['from-file', join(dir, 'instance.inf')], {
      env: { ...process.env, PREFIX: dir },
      timeout: 5 * 60_000,
    }).catch((err: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(`dscreate failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}\n${errorsTail()}`);
    });
    await start();
    await asManager(async (c) => {
      for (const e of entries()) await c.add(e.dn, e.attrs);
    });
  } catch (err) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    url: `ldap://127.0.0.1:${port}`,
    ldapsUrl: `ldaps://localhost:${tlsPort}`,
    ca: readFileSync(join(dir, 'etc', 'dirsrv', 'ssca', 'ca.crt'), 'utf8'),
    modify: (dn, attr, values) =>
      asManager((c) =>
        c.modify(dn, new Change({ operation: values.length ? 'replace' : 'delete', modification: new Attribute({ type: attr, values }) })),
      ),
    change: (dn, operation, attr, value) =>
      asManager((c) => c.modify(dn, new Change({ operation, modification: new Attribute({ type: attr, values: [value] }) }))),
    rawBind: (dn, password) => rawBind(new Client({ url: `ldap://127.0.0.1:${port}`, timeout: 5000 }), dn, password),
    stop,
    start,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The `ldap` backend config for the 389 DS test directory: groups from the memberOf plugin. */
export function dirsrvBackendConfig(ds: Pick<Dirsrv, 'url'>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: ds.url,
    bindDN: SERVICE_DN,
    bindPassword: SERVICE_PASSWORD,
    timeoutMs: 3000,
    userSearch: { baseDN: PEOPLE, filter: '(&(objectClass=inetOrgPerson)(uid={username}))', idAttr: 'entryUUID' },
    adminGroups: ['latchkey-admins'],
    ...extra,
  };
}
