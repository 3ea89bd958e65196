/**
 * What the directory sync tests share: a directory administrator's changes to the throwaway slapd
 * (people added, locked, deleted, moved out of the base), a pass through the admin API, and a user
 * signed in to an application with everything a leaver must lose.
 */
import { Client } from 'ldapts';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { BASE_DN, PEOPLE } from '../fixtures/ldap/directory.ts';
import { graphqlPost } from '../helpers/admin-api.ts';
import { sidOf } from '../helpers/backchannel-receiver.ts';
import { Browser, exchangeCode, obtainCode, type CodeFlowClient } from '../helpers/flow.ts';
import { basic, postForm } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Slapd } from '../helpers/slapd.ts';

/** The directory's administrator, as test/helpers/slapd.ts configures every throwaway slapd. */
const ROOT_DN = `cn=admin,${BASE_DN}`;
const ROOT_PASSWORD = 'directory-admin-pw';

export const dnOf = (uid: string) => `uid=${uid},${PEOPLE}`;
export const passwordOf = (uid: string) => `${uid}-directory-pw`;

async function asAdmin(slapd: Slapd, work: (c: Client) => Promise<void>): Promise<void> {
  const client = new Client({ url: slapd.url, timeout: 5000 });
  try {
    await client.bind(ROOT_DN, ROOT_PASSWORD);
    await work(client);
  } finally {
    await client.unbind();
  }
}

/** A new person in the directory (a joiner), with the password `passwordOf(uid)`. */
export const addPerson = (slapd: Slapd, uid: string, attrs: Record<string, string | string[]> = {}) =>
  slapd.add({
    dn: dnOf(uid),
    attrs: {
      objectClass: 'inetOrgPerson',
      uid,
      cn: `Person ${uid}`,
      sn: uid,
      mail: `${uid}@example.org`,
      userPassword: passwordOf(uid),
      ...attrs,
    },
  });

export const deleteEntry = (slapd: Slapd, dn: string) => asAdmin(slapd, (c) => c.del(dn));

/** Renames or moves an entry (modrdn; a new parent when `newDn`'s differs). */
export const moveEntry = (slapd: Slapd, dn: string, newDn: string) => asAdmin(slapd, (c) => c.modifyDN(dn, newDn));

/** Adds `memberDn` to the group `groupDn`. */
export const addMember = (slapd: Slapd, groupDn: string, memberDn: string) =>
  asAdmin(slapd, async (c) => {
    const { Attribute, Change } = await import('ldapts');
    await c.modify(groupDn, new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: [memberDn] }) }));
  });

export interface PassAnswer {
  outcome: 'APPLIED' | 'REFUSED' | 'FAILED';
  users: number;
  created: number;
  updated: number;
  deprovisioned: number;
  reenabled: number;
  error: string | null;
}

/** `syncBackend` through the admin API: the pass's answer, or the errors. */
export async function syncNow(server: TestServer | StartedServer, token: string, id = 'corp') {
  const answer = await graphqlPost(
    server as TestServer,
    token,
    'mutation ($id: String!) { syncBackend(id: $id) { outcome users created updated deprovisioned reenabled error } }',
    { id },
  );
  return { pass: (answer.data?.syncBackend ?? undefined) as PassAnswer | undefined, errors: answer.errors };
}

/** A user signed in through the code flow to `app`: the browser holding the SSO cookie, the tokens, the session's `sid`. */
export async function signedIn(server: { url: string }, app: CodeFlowClient, uid: string) {
  const browser = new Browser(server as TestServer);
  const { code } = await obtainCode(browser, app, uid, passwordOf(uid), { scope: 'openid' });
  const res = await exchangeCode(server as TestServer, app, code!);
  if (res.status !== 200) throw new Error(`code exchange answered ${res.status}: ${await res.text()}`);
  const tokens = (await res.json()) as { access_token: string; refresh_token: string; id_token: string };
  return { browser, tokens, sid: sidOf(tokens.id_token) };
}

export type SignedIn = Awaited<ReturnType<typeof signedIn>>;

/** Whether the access token is still active, by RFC 7662 introspection as its client. */
export async function active(server: { url: string }, app: CodeFlowClient, token: string): Promise<boolean> {
  const res = await postForm(`${server.url}/oauth/v20/introspect`, { token }, { authorization: basic(app.clientId, app.clientSecret!) });
  return ((await res.json()) as { active: boolean }).active;
}

/** The refresh grant's status (200 while the grant lives). Spends the refresh token when it works. */
export async function refreshStatus(server: { url: string }, app: CodeFlowClient, refreshToken: string): Promise<number> {
  const res = await postForm(
    `${server.url}/oauth/v20/token`,
    { grant_type: 'refresh_token', refresh_token: refreshToken },
    { authorization: basic(app.clientId, app.clientSecret!) },
  );
  return res.status;
}

/** Whether the browser's SSO cookie still signs in to `app` without a password (a redirect with a code). */
export async function ssoSignsIn(browser: Browser, app: CodeFlowClient): Promise<boolean> {
  const res = await browser.authorize({
    client_id: app.clientId,
    redirect_uri: app.redirectUri,
    response_type: 'code',
    scope: 'openid',
    state: 's',
  });
  return res.status === 302 && (res.headers.get('location') ?? '').includes('code=');
}

export type StartedServer = RunningServer & { db: { url: string } };

/** A server on an existing database (another configuration of the same deployment). */
export async function startOn(databaseUrl: string, overrides: Record<string, unknown>): Promise<StartedServer> {
  const port = await freePort();
  const config = loadConfig(
    { LATCHKEY_CONFIG: undefined },
    {
      port,
      host: '127.0.0.1',
      publicUrl: `http://127.0.0.1:${port}`,
      databaseUrl,
      secret: 'test-secret-test-secret-test-secret-0123',
      admin: { username: 'admin', password: 'admin-password-for-tests' },
      ...overrides,
    },
  );
  const running = await startServer(config, pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }));
  return { ...running, db: { url: databaseUrl } };
}
