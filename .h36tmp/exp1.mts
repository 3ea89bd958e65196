import { Attribute, Change } from 'ldapts';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { startSambaDc } from '../test/helpers/samba.ts';
const run = promisify(execFile);
const dc = await startSambaDc('', { kdc: true });
const dir = mkdtempSync('/tmp/h36/krb-');
try {
  const st = (...a: string[]) => run('samba-tool', [...a, `--configfile=${dc.configFile}`]);
  console.log((await st('user', 'create', 'svc-http', 'Svc-Http-Pw-123!')).stdout);
  await dc.asAdmin((c) => c.modify('CN=svc-http,CN=Users,DC=latchkey,DC=test', [new Change({ operation: 'replace', modification: new Attribute({ type: 'msDS-SupportedEncryptionTypes', values: ['24'] }) })]));
  console.log((await st('spn', 'add', 'HTTP/sso.latchkey.test', 'svc-http')).stdout);
  console.log((await st('domain', 'exportkeytab', join(dir, 'http.keytab'), '--principal=HTTP/sso.latchkey.test@LATCHKEY.TEST')).stdout);
  console.log((await st('user', 'create', 'kuser', 'Kuser-Pw-123!')).stdout);
  console.log((await run('klist', ['-k', '-e', join(dir, 'http.keytab')])).stdout);
  writeFileSync(join(dir, 'krb5.conf'), `[libdefaults]
  default_realm = LATCHKEY.TEST
  dns_lookup_kdc = false
  dns_lookup_realm = false
  dns_canonicalize_hostname = false
  rdns = false
[realms]
  LATCHKEY.TEST = {
    kdc = 127.0.0.1:88
  }
[domain_realm]
  .latchkey.test = LATCHKEY.TEST
`);
  const env = { ...process.env, KRB5_CONFIG: join(dir, 'krb5.conf'), KRB5CCNAME: `FILE:${join(dir, 'cc')}` };
  const k = await new Promise<string>((resolve, reject) => {
    const c = spawn('kinit', ['kuser@LATCHKEY.TEST'], { env });
    let out = ''; c.stdout.on('data', (d: Buffer) => (out += d)); c.stderr.on('data', (d: Buffer) => (out += d));
    c.stdin.end('Kuser-Pw-123!\n');
    c.on('exit', (code: number) => (code === 0 ? resolve(out) : reject(new Error(out))));
  });
  console.log('kinit', k);
  console.log((await run('klist', [], { env })).stdout);
  console.log((await run('kvno', ['HTTP/sso.latchkey.test'], { env }).catch((e) => e)).stdout);
  console.log('DIR', dir, 'CONF', dc.configFile);
  writeFileSync('/tmp/h36/state.json', JSON.stringify({ dir, conf: dc.configFile }));
  await new Promise((r) => setTimeout(r, 1000 * Number(process.env.HOLD ?? 0)));
} finally {
  await dc.destroy();
}
