import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { htmlForms } from './html-forms.ts';
import type { Fields } from './http.ts';
import { freePort } from './ports.ts';
import { stopProcess } from './processes.ts';

/**
 * A throwaway Apache httpd (Debian's apache2 with libapache2-mod-auth-mellon, never the system
 * service) in the foreground on a free loopback port: a SAML service provider the way operators
 * deploy one. `/secret/` is protected by mellon and answers with the attributes it received as
 * `name=value` lines; `/mellon/` is mellon's endpoint (metadata, postResponse, logout).
 */
export interface Mellon {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The SP's entityID: its metadata URL, as mellon deployments usually name themselves. */
  entityId: string;
  /** The SP metadata mellon serves at `/mellon/metadata`, as an operator hands it to the IdP. */
  metadataXml: string;
  /** The ACS URL, where the IdP posts its `Response`. */
  acsUrl: string;
  /** Apache's error log so far (mellon logs why it refused a response there). */
  errorLog(): string;
  stop(): Promise<void>;
}

export interface MellonOptions {
  /** The IdP's metadata (Latchkey's `/saml/v20/metadata`), as mellon reads it at start. */
  idpMetadataXml: string;
}

const MODULES = '/usr/lib/apache2/modules';

/**
 * The SP metadata, as `mellon_create_metadata` writes it (one key pair to sign and to decrypt), plus the
 * line an operator adds for single logout by SOAP: mellon's `/mellon/logout` takes the IdP's SOAP
 * LogoutRequests too, but the generated file offers only HTTP-Redirect.
 */
function spMetadata(entityId: string, base: string, certPem: string): string {
  const cert = certPem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
  const keyInfo = `<ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${cert}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>`;
  return `<?xml version="1.0"?>
<EntityDescriptor entityID="${entityId}" xmlns="urn:oasis:names:tc:SAML:2.0:metadata">
  <SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" AuthnRequestsSigned="true" WantAssertionsSigned="true">
    <KeyDescriptor use="signing">${keyInfo}</KeyDescriptor>
    <KeyDescriptor use="encryption">${keyInfo}</KeyDescriptor>
    <SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${base}/mellon/logout"/>
    <SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:SOAP" Location="${base}/mellon/logout"/>
    <NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:persistent</NameIDFormat>
    <AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${base}/mellon/postResponse" index="0" isDefault="true"/>
  </SPSSODescriptor>
</EntityDescriptor>
`;
}

/**
 * The protected page: every MELLON_* variable, one per line, and the AuthnContextClassRef of the
 * assertion, which mellon does not export by itself, read from lasso's session dump (base64).
 */
const ATTRIBUTES_CGI = `#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
printf 'REMOTE_USER=%s\\n' "$REMOTE_USER"
env | grep '^MELLON_' | grep -v -e '^MELLON_SESSION=' -e '^MELLON_DISABLE_SAMESITE=' | sort
printf 'AUTHN_CONTEXT_CLASS_REF=%s\\n' "$(printf '%s' "$MELLON_SESSION" | base64 -d | grep -o 'AuthnContextClassRef>[^<]*' | head -n 1 | cut -d '>' -f 2)"
`;

function httpdConf(dir: string, port: number): string {
  // As root (a container), Apache's workers switch to an unprivileged user, which must read the files.
  const user = process.getuid?.() === 0 ? 'User www-data\nGroup www-data\n' : '';
  return `ServerRoot "${dir}"
ServerName 127.0.0.1:${port}
Listen 127.0.0.1:${port}
PidFile ${dir}/run/httpd.pid
DefaultRuntimeDir ${dir}/run
Mutex file:${dir}/run default
ErrorLog ${dir}/error.log
LogLevel warn auth_mellon:info
${user}LoadModule mpm_prefork_module ${MODULES}/mod_mpm_prefork.so
LoadModule authn_core_module ${MODULES}/mod_authn_core.so
LoadModule authz_core_module ${MODULES}/mod_authz_core.so
LoadModule authz_user_module ${MODULES}/mod_authz_user.so
LoadModule alias_module ${MODULES}/mod_alias.so
LoadModule setenvif_module ${MODULES}/mod_setenvif.so
LoadModule cgi_module ${MODULES}/mod_cgi.so
LoadModule auth_mellon_module ${MODULES}/mod_auth_mellon.so
StartServers 1
MinSpareServers 1
MaxSpareServers 2
MaxRequestWorkers 10
MellonCacheSize 100
MellonLockFile ${dir}/run/mellon.lock
DocumentRoot ${dir}/htdocs
<Directory />
  Require all granted
</Directory>
# Plain http on loopback: mellon marks its cookies SameSite=None, which browsers refuse without Secure
# (https). Without the attribute they are Lax, and the IdP and the SP are the same site (127.0.0.1), so
# the cookie still rides the IdP page's POST to the ACS.
SetEnvIf Request_URI . MELLON_DISABLE_SAMESITE=1
ScriptAliasMatch ^/secret/ ${dir}/cgi/attributes.sh
<Location />
  MellonEnable info
  MellonEndpointPath /mellon
  MellonSPPrivateKeyFile ${dir}/sp.key
  MellonSPCertFile ${dir}/sp.pem
  MellonSPMetadataFile ${dir}/sp-metadata.xml
  MellonIdPMetadataFile ${dir}/idp-metadata.xml
  MellonSecureCookie Off
  MellonMergeEnvVars On ";"
  MellonSessionDump On
</Location>
<Location /secret/>
  AuthType Mellon
  MellonEnable auth
  Require valid-user
</Location>
`;
}

/** Polls until Apache serves the SP metadata, or fails with its error log if it exits first. */
async function waitForApache(child: ChildProcess, url: string, log: () => string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`apache2 exited (${child.exitCode ?? child.signalCode}):\n${log()}`);
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`apache2 did not answer ${url} within ${ms} ms:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startMellon(options: MellonOptions): Promise<Mellon> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-mellon-'));
  chmodSync(dir, 0o755);
  for (const sub of ['run', 'htdocs', 'cgi']) mkdirSync(join(dir, sub), { mode: 0o755 });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const entityId = `${url}/mellon/metadata`;

  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'sp.key', '-out', 'sp.pem', '-days', '2', '-subj', '/CN=127.0.0.1'],
    { cwd: dir, stdio: 'pipe' },
  );
  chmodSync(join(dir, 'sp.key'), 0o644); // a throwaway key the worker user must read
  const metadataXml = spMetadata(entityId, url, readFileSync(join(dir, 'sp.pem'), 'utf8'));
  writeFileSync(join(dir, 'sp-metadata.xml'), metadataXml);
  writeFileSync(join(dir, 'idp-metadata.xml'), options.idpMetadataXml);
  writeFileSync(join(dir, 'cgi', 'attributes.sh'), ATTRIBUTES_CGI, { mode: 0o755 });
  writeFileSync(join(dir, 'htdocs', 'signed-out.html'), '<h1>Signed out</h1>\n');
  writeFileSync(join(dir, 'httpd.conf'), httpdConf(dir, port));
  writeFileSync(join(dir, 'error.log'), '');

  const errorLog = () => readFileSync(join(dir, 'error.log'), 'utf8');
  // Its own process group: prefork's shutdown signals its whole group, which would otherwise be jest's.
  const child = spawn('/usr/sbin/apache2', ['-DFOREGROUND', '-d', dir, '-f', join(dir, 'httpd.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    await waitForApache(child, `${url}/mellon/metadata`, () => `${stderr}${errorLog()}`);
  } catch (err) {
    await stopProcess(child, 5000);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    entityId,
    metadataXml,
    acsUrl: `${url}/mellon/postResponse`,
    errorLog,
    async stop() {
      await stopProcess(child, 5000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A page a walk ended on: where, with what status, and its body. */
export interface WebPage {
  url: string;
  status: number;
  html: string;
}

/**
 * A browser as plain HTTP, for journeys that cross Apache and Latchkey: one cookie jar, by name
 * only (both run on 127.0.0.1, and cookies do not tell ports apart), redirects followed hop by hop as a browser does,
 * and forms (the login page, the auto-posting SAML form) submitted to their resolved action.
 */
export class WebWalker {
  private readonly cookies = new Map<string, string>();
  /** Every URL the walk went through, in order, so a test can see that it passed by the IdP. */
  readonly visited: string[] = [];

  /** Drops a cookie, as when a browser clears one site's cookies (mellon's, not Latchkey's). */
  forget(name: string): void {
    this.cookies.delete(name);
  }

  /** GET `url` and follow redirects to the page they end on. */
  open(url: string): Promise<WebPage> {
    return this.follow(url, undefined);
  }

  /** Submits the page's first form (the one a user would press) with `fields` over its own. */
  submit(page: WebPage, fields: Fields = {}): Promise<WebPage> {
    const form = htmlForms(page.html)[0];
    if (!form) throw new Error(`no form on ${page.url} (${page.status}):\n${page.html.slice(0, 500)}`);
    const action = new URL(form.action || page.url, page.url).href;
    const body = new URLSearchParams(
      Object.entries({ ...form.fields, ...fields }).filter((e): e is [string, string] => e[1] !== undefined),
    );
    if (form.method !== 'post') {
      const target = new URL(action);
      for (const [k, v] of body) target.searchParams.set(k, v);
      return this.open(target.href);
    }
    return this.follow(action, body);
  }

  private async follow(start: string, body: URLSearchParams | undefined): Promise<WebPage> {
    let url = start;
    for (let hop = 0; hop < 20; hop++) {
      this.visited.push(url);
      const res = await fetch(url, {
        method: body ? 'POST' : 'GET',
        redirect: 'manual',
        headers: {
          cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: body?.toString(),
      });
      for (const line of res.headers.getSetCookie()) {
        const pair = line.split(';')[0]!;
        const [name, value] = [pair.slice(0, pair.indexOf('=')).trim(), pair.slice(pair.indexOf('=') + 1).trim()];
        if (value && !/;\s*max-age=0\b/i.test(line)) this.cookies.set(name, value);
        else this.cookies.delete(name);
      }
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.body?.cancel();
        url = new URL(location, url).href;
        body = undefined; // 302/303 turn a POST into a GET, as browsers do
        continue;
      }
      return { url, status: res.status, html: await res.text() };
    }
    throw new Error(`more than 20 redirects from ${start}: ${this.visited.slice(-5).join(' → ')}`);
  }
}

/** The `name=value` lines of mellon's protected page, as an object. */
export function attributesOf(page: WebPage): Record<string, string> {
  return Object.fromEntries(
    page.html
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}
