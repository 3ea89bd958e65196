/**
 * Glewlwyd (https://github.com/babelouest/glewlwyd, Debian package `glewlwyd`), a single sign-on
 * server in C, as a peer: what an operator would otherwise run. The bench starts its own instance,
 * never the system service: a throwaway SQLite database initialised from the package's own SQL
 * script, a config file of its own on a free loopback port, then through its admin REST API (signed
 * in as the script's `admin`): an OIDC plugin instance, a scope, a confidential client and a user.
 *
 * What it does per request, as it ships: client and user passwords are stored as PBKDF2 (150,000
 * iterations, the database modules' default) and checked on every grant (a second client keeps its
 * secret as given, `client_secret`, which Glewlwyd compares without PBKDF2: both are measured); access tokens and id_tokens
 * are JWTs, here HS256 (`jwt-type: sha`, its cheapest signature: Latchkey's access tokens are opaque,
 * a SHA-256 of 256 random bits, so an RSA signature per token would weigh against Glewlwyd).
 * A machine without the package skips this peer and says why; `.ci/run` does not install it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { request, waitFor200 } from './http.ts';
import { freePort } from '../test/helpers/ports.ts';
import { spawnTracked } from './processes.ts';
import type { Peer } from './peers.ts';

// Latchkey's own SQLite driver (untyped in this tree, as in src/db/connect.ts): the machine may lack the sqlite3 CLI.
const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => { exec(sql: string): void; close(): void };

const BINARY = '/usr/bin/glewlwyd';
const INIT_SQL = '/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz';
const MODULES = '/usr/lib/glewlwyd';
/** The init script's administrator (its README: "the user admin using the password password"). */
const ADMIN = { username: 'admin', password: 'password' };
const SCOPE = 'bench';

export interface GlewlwydPeer extends Peer {
  /** The OIDC plugin's endpoints. */
  tokenUrl: string;
  userinfoUrl: string;
  /** An access token of the bench user (scope openid), for userinfo. */
  userAccessToken: string;
  /** A second client_credentials client whose secret Glewlwyd keeps as given (`client_secret`), no PBKDF2. */
  plainSecretClient: { clientId: string; clientSecret: string };
}

export type GlewlwydStart = { peer: GlewlwydPeer; version: string } | { skipped: string };

function installedVersion(): string | undefined {
  if (!existsSync(BINARY) || !existsSync(INIT_SQL)) return undefined;
  try {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: `${Version}` is dpkg-query's own --showformat field, passed to it literally, not a template.
    return execFileSync('dpkg-query', ['-W', '-f', '${Version}', 'glewlwyd'], { encoding: 'utf8' }).trim() || 'unknown version';
  } catch {
    return 'unknown version';
  }
}

/** libconfig syntax, as /etc/glewlwyd/glewlwyd.conf: only what this instance needs. */
function configFile(port: number, url: string, dbPath: string): string {
  return `port=${port}
bind_address="127.0.0.1"
external_url="${url}"
login_url="login.html"
api_prefix="api"
log_mode="console"
log_level="WARNING"
cookie_domain="127.0.0.1"
cookie_secure=0
session_expiration=2419200
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=true
login_api_enabled=true
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="${MODULES}/user"
client_module_path="${MODULES}/client"
user_auth_scheme_module_path="${MODULES}/scheme"
plugin_module_path="${MODULES}/plugin"
use_secure_connection=false
# 2.7.5 refuses to start without these three, even with use_secure_connection=false.
secure_connection_key_file="/nonexistent/glewlwyd.key"
secure_connection_pem_file="/nonexistent/glewlwyd.pem"
secure_connection_ca_file="/nonexistent/ca.crt"
hash_algorithm="SHA512"
database = { type = "sqlite3"; path = "${dbPath}"; };
`;
}

/** One admin API call with the admin's session cookie; anything but 200 fails the set-up. */
async function admin(apiUrl: string, cookie: string, path: string, body: unknown): Promise<void> {
  const res = await request(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Cookie: cookie },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`Glewlwyd POST ${path}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
}

/**
 * Starts Glewlwyd and seeds it with the same client id and secret as Latchkey's `service` client
 * (client_credentials, password grant) and one user with the bench user's name and password.
 */
export async function startGlewlwyd(
  workDir: string,
  client: { clientId: string; clientSecret: string },
  user: { username: string; password: string },
): Promise<GlewlwydStart> {
  const version = installedVersion();
  if (!version) return { skipped: `Glewlwyd is not installed (${BINARY} or ${INIT_SQL} missing; Debian: apt-get install glewlwyd)` };

  const dbPath = join(workDir, 'glewlwyd.db');
  const db = new Database(dbPath);
  try {
    db.exec(gunzipSync(readFileSync(INIT_SQL)).toString('utf8'));
  } finally {
    db.close();
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const apiUrl = `${url}/api`;
  const conf = join(workDir, 'glewlwyd.conf');
  writeFileSync(conf, configFile(port, url, dbPath));
  const tracked = spawnTracked('Glewlwyd', BINARY, [`--config-file=${conf}`], { logFile: join(workDir, 'glewlwyd.log') });
  try {
    await waitFor200(`${url}/config/`, { timeoutMs: 30_000, alive: tracked.running, intervalMs: 50 });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- Glewlwyd log ---\n${tracked.output()}`);
  }

  const login = await request(`${apiUrl}/auth/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  const cookie = [login.headers['set-cookie'] ?? []]
    .flat()
    .map((c) => c.split(';')[0])
    .join('; ');
  if (login.status !== 200 || !cookie) throw new Error(`Glewlwyd admin sign-in: HTTP ${login.status} ${login.body.slice(0, 300)}`);

  await admin(apiUrl, cookie, '/mod/plugin/', {
    module: 'oidc',
    name: 'oidc',
    display_name: 'OpenID Connect',
    parameters: {
      iss: url,
      'jwt-type': 'sha',
      'jwt-key-size': '256',
      key: randomBytes(32).toString('base64url'),
      'access-token-duration': 3600,
      'refresh-token-duration': 1209600,
      'code-duration': 600,
      'refresh-token-rolling': true,
      'allow-non-oidc': true,
      'auth-type-code-enabled': true,
      'auth-type-token-enabled': false,
      'auth-type-id-token-enabled': true,
      'auth-type-none-enabled': false,
      'auth-type-password-enabled': true,
      'auth-type-client-enabled': true,
      'auth-type-device-enabled': false,
      'auth-type-refresh-enabled': true,
      'subject-type': 'public',
      'allowed-scope': ['openid', SCOPE],
      scope: [],
      'additional-parameters': [],
      claims: [],
      'pkce-allowed': false,
      'introspection-revocation-allowed': false,
      'jwks-show': true,
    },
  });
  await admin(apiUrl, cookie, '/scope/', {
    name: SCOPE,
    display_name: SCOPE,
    description: 'the bench',
    password_required: false,
    scheme: {},
  });
  // `password` is the secret client_secret_post checks (stored as PBKDF2).
  await admin(apiUrl, cookie, '/client/', {
    client_id: client.clientId,
    name: 'bench',
    confidential: true,
    enabled: true,
    password: client.clientSecret,
    authorization_type: ['client_credentials', 'password'],
    scope: [SCOPE, 'openid'],
    redirect_uri: [],
    token_endpoint_auth_method: ['client_secret_post'],
  });
  // The same client with the secret Glewlwyd keeps as given (its `client_secret` property, meant for
  // client_secret_jwt) and compares without PBKDF2 when set: the cheap secret check, as Latchkey's.
  const plainSecretClient = { clientId: `${client.clientId}-plain`, clientSecret: client.clientSecret };
  await admin(apiUrl, cookie, '/client/', {
    client_id: plainSecretClient.clientId,
    name: 'bench (plain secret)',
    confidential: true,
    enabled: true,
    client_secret: plainSecretClient.clientSecret,
    authorization_type: ['client_credentials'],
    scope: [SCOPE],
    redirect_uri: [],
    token_endpoint_auth_method: ['client_secret_post'],
  });
  await admin(apiUrl, cookie, '/user/', {
    username: user.username,
    name: 'Bench User',
    email: `${user.username}@example.org`,
    enabled: true,
    password: user.password,
    scope: ['openid', SCOPE],
  });

  const tokenUrl = `${apiUrl}/oidc/token`;
  const grant = await request(tokenUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      username: user.username,
      password: user.password,
      scope: 'openid',
    }).toString(),
  });
  const userAccessToken = grant.status === 200 ? (JSON.parse(grant.body) as { access_token?: string }).access_token : undefined;
  if (!userAccessToken) throw new Error(`Glewlwyd password grant: HTTP ${grant.status} ${grant.body.slice(0, 300)}`);
  return {
    peer: { name: 'Glewlwyd', url, process: tracked, tokenUrl, userinfoUrl: `${apiUrl}/oidc/userinfo`, userAccessToken, plainSecretClient },
    version,
  };
}

/** The scope the client_credentials requests ask Glewlwyd for (it requires one). */
export const GLEWLWYD_SCOPE = SCOPE;
