import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { stopProcess } from './processes.ts';

/**
 * A throwaway rsyslog (Debian's `rsyslog`, never the system service; `rsyslog-gnutls` for TLS) on a
 * free loopback port, with its own config in a temp folder: `imtcp` taking octet-counted messages,
 * plain or over TLS (RFC 5425) with a certificate a generated CA signed and a client certificate
 * required, writing every message it parsed to a file, one line each, the parsed fields apart.
 * A missing rsyslogd fails the tests that need it: they are never skipped.
 */
export interface Rsyslog {
  /** `tcp://127.0.0.1:<port>` or `tls://127.0.0.1:<port>`. */
  url: string;
  /** With `tls`: the files of the CA that signed the server, and of a client certificate it accepts. */
  files: { ca: string; cert: string; key: string };
  /** Every message received so far, as rsyslog parsed it. */
  received(): Received[];
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP: rsyslog keeps its connections but reads nothing (a receiver that hangs). */
  pause(): void;
  /** SIGKILL (after SIGCONT): what it had not read is dropped by the kernel, and its peers get a reset. */
  crash(): Promise<void>;
  /** Bytes that arrived on its connections and that it has not read yet (Linux's /proc/net/tcp). */
  unread(): number;
  destroy(): Promise<void>;
}

/** One message as rsyslog's parser saw it (its properties of the same names). */
export interface Received {
  pri: number;
  timestamp: string;
  hostname: string;
  appName: string;
  procId: string;
  msgId: string;
  structuredData: string;
  msg: string;
}

/** A CA, a server certificate for 127.0.0.1 / localhost and a client certificate, made with openssl. */
function makeCertificates(dir: string): { ca: string; cert: string; key: string; serverCert: string; serverKey: string } {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Latchkey Syslog Test CA');
  const issue = (name: string, cn: string, ext: string) => {
    run('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    writeFileSync(join(dir, `${name}.ext`), ext);
    run(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  };
  issue('server', 'localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  issue('client', 'latchkey', 'extendedKeyUsage=clientAuth\n');
  const at = (f: string) => join(dir, f);
  return { ca: at('ca.pem'), cert: at('client.pem'), key: at('client.key'), serverCert: at('server.pem'), serverKey: at('server.key') };
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
        if (Date.now() > deadline) reject(new Error(`rsyslogd did not listen on ${port} within ${ms} ms`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

/** The receive queues of the established connections whose local end is 127.0.0.1:`port`, summed. */
function unreadBytes(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols[1] === local && cols[3] === '01')
    .reduce((sum, cols) => sum + Number.parseInt(cols[4]!.split(':')[1]!, 16), 0);
}

const FIELDS = ['pri', 'timereported:::date-rfc3339', 'hostname', 'app-name', 'procid', 'msgid', 'structured-data', 'msg'];

export async function startRsyslog(options: { tls?: boolean } = {}): Promise<Rsyslog> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-rsyslog-'));
  const port = await freePort();
  const out = join(dir, 'received.log');
  const certs = options.tls ? makeCertificates(dir) : undefined;
  // Tabs apart: rsyslog writes a tab inside a message as `#011`, so a tab here only ever separates fields.
  const template = FIELDS.map((f) => `%${f}%`).join('\\t');
  writeFileSync(
    join(dir, 'rsyslog.conf'),
    `global(workDirectory="${dir}" maxMessageSize="64k"${
      certs
        ? ` defaultNetstreamDriverCAFile="${certs.ca}" defaultNetstreamDriverCertFile="${certs.serverCert}" defaultNetstreamDriverKeyFile="${certs.serverKey}"`
        : ''
    })
module(load="imtcp"${certs ? ' streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="x509/certvalid"' : ''})
template(name="parsed" type="string" string="${template}\\n")
ruleset(name="received") {
  action(type="omfile" file="${out}" template="parsed")
}
input(type="imtcp" port="${port}" address="127.0.0.1" ruleset="received")
`,
  );

  let child: ChildProcess | undefined;
  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return;
    child = spawn('rsyslogd', ['-n', '-f', join(dir, 'rsyslog.conf'), '-i', join(dir, 'rsyslogd.pid')], { stdio: 'ignore' });
    const exited = new Promise<never>((_, reject) => child!.once('exit', (code) => reject(new Error(`rsyslogd exited with ${code}`))));
    exited.catch(() => undefined);
    await Promise.race([waitForPort(port, 10_000), exited]);
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    await stopProcess(c, 10_000);
  };
  await start();

  return {
    url: `${options.tls ? 'tls' : 'tcp'}://127.0.0.1:${port}`,
    files: { ca: certs?.ca ?? '', cert: certs?.cert ?? '', key: certs?.key ?? '' },
    received: () =>
      existsSync(out)
        ? readFileSync(out, 'utf8')
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => {
              const [pri, timestamp, hostname, appName, procId, msgId, structuredData, msg] = line.split('\t') as Array<string>;
              return {
                pri: Number(pri),
                timestamp: timestamp!,
                hostname: hostname!,
                appName: appName!,
                procId: procId!,
                msgId: msgId!,
                structuredData: structuredData!,
                msg: msg ?? '',
              };
            })
        : [],
    start,
    stop,
    pause: () => child?.kill('SIGSTOP'),
    async crash() {
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const gone = new Promise((resolve) => c.once('exit', resolve));
      c.kill('SIGKILL');
      await gone;
    },
    unread: () => unreadBytes(port),
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
