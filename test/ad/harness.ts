import { basic, get, postForm } from '../helpers/http.ts';
import type { SambaDc } from '../helpers/samba.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapChain } from '../helpers/slapd.ts';
import type { DatabaseKind } from '../helpers/databases.ts';
import { ADMINS_DN, GROUPS, PEOPLE, SERVICE_DN, SERVICE_PASSWORD } from './directory.ts';

/** The DC of the AD suite, started once by `active-directory.test.ts` before any describe here runs. */
export const domain: { dc?: SambaDc } = {};
export function dc(): SambaDc {
  if (!domain.dc) throw new Error('the Samba DC did not start');
  return domain.dc;
}

/** How Latchkey is pointed at the DC: docs/identity-backends.md's Active Directory example, with the test CA. */
export function adConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: dc().ldapsUrl,
    tls: { ca: dc().ca },
    bindDN: SERVICE_DN,
    bindPassword: SERVICE_PASSWORD,
    userSearch: {
      baseDN: PEOPLE,
      filter: '(&(objectCategory=person)(objectClass=user)(sAMAccountName={username}))',
      usernameAttr: 'sAMAccountName',
      idAttr: 'objectGUID',
      nameAttr: 'displayName',
    },
    groupSearch: { baseDN: GROUPS, filter: '(objectClass=group)', nested: 'matchingRule' },
    adminGroups: [ADMINS_DN],
    ...extra,
  };
}

/** StartTLS on 389 instead of ldaps on 636: the same directory, the other way AD offers TLS. */
export const startTlsConfig = (extra: Record<string, unknown> = {}) => adConfig({ url: dc().ldapUrl, startTLS: true, ...extra });

/** Real Latchkey servers in front of the DC, stopped together. */
export class Servers {
  private readonly running: TestServer[] = [];

  constructor(private readonly kind: DatabaseKind) {}

  async start(config: Record<string, unknown>): Promise<TestServer> {
    const server = await startTestServer(this.kind, ldapChain(config));
    this.running.push(server);
    return server;
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.running.splice(0).map((s) => s.stop()));
  }
}

export type Tokens = { access_token: string; refresh_token?: string; id_token?: string };

const clients = new WeakMap<TestServer, Promise<{ clientId: string; clientSecret: string | null }>>();

/** A password grant by the server's test application; the answer as the application sees it. */
export async function signIn(server: TestServer, username: string, password: string) {
  if (!clients.has(server))
    clients.set(server, server.client({ grantTypes: ['password', 'refresh_token'], scopes: ['openid', 'profile', 'email', 'groups'] }));
  const c = await clients.get(server)!;
  const res = await postForm(
    `${server.url}/oauth/v20/token`,
    { grant_type: 'password', username, password, scope: 'openid profile email groups' },
    { authorization: basic(c.clientId, c.clientSecret!) },
  );
  return { status: res.status, body: (await res.json()) as Tokens & { error?: string; error_description?: string } };
}

/** A refresh grant by the same test application; the answer as the application sees it. */
export async function refresh(server: TestServer, refreshToken: string) {
  const c = await clients.get(server)!;
  const res = await postForm(
    `${server.url}/oauth/v20/token`,
    { grant_type: 'refresh_token', refresh_token: refreshToken },
    { authorization: basic(c.clientId, c.clientSecret!) },
  );
  return { status: res.status, body: (await res.json()) as Tokens & { error?: string; error_description?: string } };
}

/** The `/me` profile of a token. */
export const me = async (server: TestServer, accessToken: string) =>
  (await (await get(`${server.url}/api/oauth/v20/me`, { access_token: accessToken })).json()) as {
    userid: string;
    uid: string;
    displayName?: string;
    email?: string;
    groups: string[];
  };

/** Signs in (which must succeed) and returns the profile. */
export async function profileOf(server: TestServer, username: string, password: string) {
  const answer = await signIn(server, username, password);
  if (answer.status !== 200) throw new Error(`${username} could not sign in: ${answer.status} ${JSON.stringify(answer.body)}`);
  return me(server, answer.body.access_token);
}
