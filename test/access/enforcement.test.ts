import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { groupDn, GROUPS, people, personDn } from '../fixtures/ldap/directory.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { basic, locationQuery, postForm } from '../helpers/http.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

/** The directory group the assigned applications name: bob is in it, alice is not. */
const APP_GROUP = 'wiki-users';
/** groupOfNames needs a member: bob's removal leaves this one (an entry that need not exist). */
const PLACEHOLDER = `uid=nobody,${GROUPS}`;
const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
/** `access.contact`: named on the refusal page after the administrator. */
const CONTACT = 'the IT help desk, help@example.org';

const REGISTER = `mutation Register($input: RegisterClientInput!) {
  registerClient(input: $input) { client { clientId name access { mode groups users backends } } clientSecret }
}`;
const DENIALS = `query Denials($clientId: ID!) {
  auditEvents(first: 50, kind: "access.denied", clientId: $clientId) { edges { node { kind userId clientId details } } }
}`;

interface App {
  clientId: string;
  clientSecret: string | null;
  redirectUri: string;
  name: string;
}
interface Denial {
  kind: string;
  userId: string;
  clientId: string;
  details: string;
}

let slapd: Slapd;

beforeAll(async () => {
  slapd = await startSlapd();
  await slapd.add({
    dn: groupDn(APP_GROUP),
    attrs: { objectClass: 'groupOfNames', cn: APP_GROUP, member: [personDn(people.bob), PLACEHOLDER] },
  });
});
afterAll(async () => {
  await slapd?.destroy();
});

/**
 * docs/access-and-claims.md: an application's access policy, enforced wherever the application would
 * get something for a user: the authorize endpoint (SSO session or not), `/device`, the password and
 * refresh grants; each refusal audited and counted. Directory users of a real slapd, on both databases.
 */
describe.each(databaseKinds)('access policies enforced for OAuth clients on %s', (kind) => {
  let server: TestServer;
  let token: string;

  /** A client registered through the admin API, as an administrator would. */
  async function register(input: Record<string, unknown>): Promise<App> {
    const redirectUri = 'http://localhost:3000/callback';
    const answer = await graphqlPost(server, token, REGISTER, {
      input: { name: 'Open app', redirectUris: [redirectUri], scopes: ['openid', 'profile'], ...input },
    });
    expect(answer.errors).toBeUndefined();
    const reg = answer.data!.registerClient as { client: { clientId: string; name: string }; clientSecret: string | null };
    return { clientId: reg.client.clientId, clientSecret: reg.clientSecret, redirectUri, name: reg.client.name };
  }
  const assigned = (over: Record<string, unknown> = {}) => ({ mode: 'ASSIGNED', groups: [APP_GROUP], ...over });

  const denials = async (clientId: string): Promise<Denial[]> => {
    const answer = await graphqlPost(server, token, DENIALS, { clientId });
    expect(answer.errors).toBeUndefined();
    return (answer.data!.auditEvents as { edges: Array<{ node: Denial }> }).edges.map((e) => e.node);
  };
  const deniedCount = async (application: string) => sample(await scrape(server.url), 'latchkey_access_denied_total', { application });
  const userIdOf = async (username: string, backend = 'corp') => (await server.ctx.users.findByUsername(backend, username))!.id;

  const passwordGrant = (app: App, username: string, password: string) =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password, scope: 'openid profile' },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );
  const refreshGrant = (app: App, refreshToken: string) =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'refresh_token', refresh_token: refreshToken },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );
  const authorizeQuery = (app: App, extra: Record<string, string> = {}) => ({
    client_id: app.clientId,
    redirect_uri: app.redirectUri,
    response_type: 'code',
    scope: 'openid profile',
    state: 'st-1',
    ...extra,
  });

  /** The refusal page: 403, the application's name, whom to ask, the account page; nothing for the application. */
  async function expectRefusalPage(res: Response, app: App): Promise<void> {
    expect(res.status).toBe(403);
    expect(res.headers.get('location')).toBeNull();
    const html = await res.text();
    expect(html).toContain(`You don't have access to <span id="application">${app.name}</span>`);
    expect(html).toContain(`Ask your administrator to give you access: <span id="contact">${CONTACT}</span>.`);
    expect(html).toContain('href="/account"');
    expect(html).not.toContain(app.redirectUri);
    expect(html).not.toContain('<form');
  }

  beforeAll(async () => {
    server = await startTestServer(kind, { ...ldapChain(ldapBackendConfig(slapd)), access: { contact: CONTACT } });
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
  });
  afterAll(() => server?.stop());

  test('authorize: a directory user outside the group gets the 403 page naming the app, audited and counted; a member gets a code', async () => {
    const wiki = await register({ name: 'Engineering Wiki', access: assigned() });
    const before = await deniedCount(wiki.clientId);

    const refused = await new Browser(server).signIn(authorizeQuery(wiki), 'alice', people.alice.password);
    await expectRefusalPage(refused, wiki);

    const events = await denials(wiki.clientId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'access.denied', userId: await userIdOf('alice'), clientId: wiki.clientId });
    expect(JSON.parse(events[0]!.details)).toMatchObject({ application: wiki.clientId, kind: 'client', reason: 'not_assigned' });
    expect(await deniedCount(wiki.clientId)).toBe(before + 1);

    const { code, state } = await obtainCode(new Browser(server), wiki, 'bob', people.bob.password, { scope: 'openid profile' });
    expect(state).toBe('st-1');
    expect((await exchangeCode(server, wiki, code!)).status).toBe(200);
    expect(await denials(wiki.clientId)).toHaveLength(1);
  });

  test('a live SSO session from another application never skips the check, prompt=none included', async () => {
    const open = await register({ name: 'Open app' });
    const wiki = await register({ name: 'Engineering Wiki', access: assigned() });
    const alice = new Browser(server);
    expect((await obtainCode(alice, open, 'alice', people.alice.password, { scope: 'openid profile' })).code).toBeDefined();

    await expectRefusalPage(await alice.authorize(authorizeQuery(wiki)), wiki);
    // A silent request gets the page too, never an error or a code at the redirect URI.
    await expectRefusalPage(await alice.authorize(authorizeQuery(wiki, { prompt: 'none' })), wiki);
    expect(await denials(wiki.clientId)).toHaveLength(2);

    // A member's session goes straight through.
    const bob = new Browser(server);
    await obtainCode(bob, open, 'bob', people.bob.password, { scope: 'openid profile' });
    const silent = await bob.authorize(authorizeQuery(wiki, { prompt: 'none' }));
    expect(silent.status).toBe(302);
    expect(locationQuery(silent).code).toBeDefined();
  });

  test('the password grant: invalid_grant in both error styles for a user outside the group; a member gets tokens', async () => {
    for (const errorCodes of ['MAXKEY', 'RFC6749']) {
      const app = await register({ name: `CLI ${errorCodes}`, grantTypes: ['PASSWORD'], errorCodes, access: assigned() });
      const before = await deniedCount(app.clientId);
      const refused = await passwordGrant(app, 'alice', people.alice.password);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({ error: 'invalid_grant', error_description: 'the user may not use this application' });
      expect(await deniedCount(app.clientId)).toBe(before + 1);
      expect(await denials(app.clientId)).toHaveLength(1);
      expect((await passwordGrant(app, 'bob', people.bob.password)).status).toBe(200);
    }
  });

  test('`users` and `backends` in the policy let their users in, and no one else', async () => {
    const danaId = await server.user('dana', 'dana-password-1');
    const named = await register({ name: 'Named', grantTypes: ['PASSWORD'], access: { mode: 'ASSIGNED', users: [danaId] } });
    expect((await passwordGrant(named, 'dana', 'dana-password-1')).status).toBe(200);
    expect((await passwordGrant(named, 'alice', people.alice.password)).status).toBe(400);

    const directory = await register({ name: 'Directory', grantTypes: ['PASSWORD'], access: { mode: 'ASSIGNED', backends: ['corp'] } });
    expect((await passwordGrant(directory, 'alice', people.alice.password)).status).toBe(200);
    const dana = await passwordGrant(directory, 'dana', 'dana-password-1');
    expect(dana.status).toBe(400);
    expect(((await dana.json()) as { error_description: string }).error_description).toBe('the user may not use this application');

    // The same in the browser: a user the policy names signs in.
    const browserApp = await register({ name: 'Named in the browser', access: { mode: 'ASSIGNED', users: [danaId] } });
    expect((await obtainCode(new Browser(server), browserApp, 'dana', 'dana-password-1', { scope: 'openid profile' })).code).toBeDefined();
  });

  test('the refresh grant reads the directory again: a user taken out of the group loses the refresh at its next use', async () => {
    const apps = [
      {
        app: await register({ name: 'Sync MAXKEY', grantTypes: ['PASSWORD', 'REFRESH_TOKEN'], access: assigned() }),
        error: 'invalid_refresh_token',
      },
      {
        app: await register({ name: 'Sync RFC', grantTypes: ['PASSWORD', 'REFRESH_TOKEN'], errorCodes: 'RFC6749', access: assigned() }),
        error: 'invalid_grant',
      },
    ];
    const tokens: string[] = [];
    for (const { app } of apps) {
      const res = await passwordGrant(app, 'bob', people.bob.password);
      expect(res.status).toBe(200);
      const first = (await res.json()) as { refresh_token: string };
      const again = await refreshGrant(app, first.refresh_token);
      expect(again.status).toBe(200);
      tokens.push(((await again.json()) as { refresh_token: string }).refresh_token);
    }

    await slapd.modify(groupDn(APP_GROUP), 'member', [PLACEHOLDER]);
    try {
      for (const [i, { app, error }] of apps.entries()) {
        const refused = await refreshGrant(app, tokens[i]!);
        expect(refused.status).toBe(400);
        expect(await refused.json()).toEqual({ error, error_description: 'the user may not use this application' });
        const events = await denials(app.clientId);
        expect(events).toHaveLength(1);
        expect(events[0]!.userId).toBe(await userIdOf('bob'));
      }
    } finally {
      await slapd.modify(groupDn(APP_GROUP), 'member', [personDn(people.bob), PLACEHOLDER]);
    }
    // The refused token was not spent: given access back, the user refreshes with it.
    expect((await refreshGrant(apps[0]!.app, tokens[0]!)).status).toBe(200);
  });

  test('a code issued, or a device request approved, before the policy changed gets nothing after it', async () => {
    const ledger = await register({ name: 'Ledger', access: assigned() });
    const { code } = await obtainCode(new Browser(server), ledger, 'bob', people.bob.password, { scope: 'openid profile' });
    const tv = await register({ name: 'Hall TV', confidential: false, grantTypes: ['DEVICE_CODE'], redirectUris: [], access: assigned() });
    const started = await postForm(`${server.url}/oauth/v20/device_authorization`, { client_id: tv.clientId, scope: 'openid profile' });
    const { device_code, user_code } = (await started.json()) as { device_code: string; user_code: string };
    const bob = new Browser(server);
    const page = await bob.submit(
      await bob.authorize({ user_code }, '/device'),
      { username: 'bob', password: people.bob.password },
      '/device',
    );
    expect((await bob.submit(page, { decision: 'approve' }, '/device')).status).toBe(200);

    // Both applications now admit one other user alone.
    for (const app of [ledger, tv]) {
      const changed = await graphqlPost(
        server,
        token,
        'mutation($c: ID!, $i: UpdateClientInput!) { updateClient(clientId: $c, input: $i) { clientId } }',
        {
          c: app.clientId,
          i: { access: { mode: 'ASSIGNED', users: ['9b2f0c1e-0000-4000-8000-000000000001'] } },
        },
      );
      expect(changed.errors).toBeUndefined();
    }
    const exchanged = await exchangeCode(server, ledger, code!);
    expect(exchanged.status).toBe(400);
    expect(await exchanged.json()).toMatchObject({ error: 'invalid_grant', error_description: 'the user may not use this application' });
    const polled = await postForm(`${server.url}/oauth/v20/token`, { grant_type: DEVICE, device_code, client_id: tv.clientId });
    expect(await polled.json()).toMatchObject({ error: 'invalid_grant', error_description: 'the user may not use this application' });
    expect((await denials(ledger.clientId)).map((e) => e.kind)).toEqual(['access.denied']);
    expect((await denials(tv.clientId)).map((e) => e.kind)).toEqual(['access.denied']);
  });

  test('/device: a user outside the group gets the 403 page instead of the approval form; a member approves', async () => {
    const tv = await register({
      name: 'Lobby TV',
      confidential: false,
      grantTypes: ['DEVICE_CODE'],
      redirectUris: [],
      access: assigned(),
    });
    const start = async () => {
      const res = await postForm(`${server.url}/oauth/v20/device_authorization`, { client_id: tv.clientId, scope: 'openid profile' });
      expect(res.status).toBe(200);
      return (await res.json()) as { device_code: string; user_code: string };
    };
    const poll = async (deviceCode: string) =>
      (await (
        await postForm(`${server.url}/oauth/v20/token`, { grant_type: DEVICE, device_code: deviceCode, client_id: tv.clientId })
      ).json()) as {
        error?: string;
        access_token?: string;
      };

    const refusedRequest = await start();
    const alice = new Browser(server);
    const login = await alice.authorize({ user_code: refusedRequest.user_code }, '/device');
    expect(login.status).toBe(200);
    await expectRefusalPage(await alice.submit(login, { username: 'alice', password: people.alice.password }, '/device'), tv);
    // Signed in now, she is refused again on the way back, and the request stays undecided.
    await expectRefusalPage(await alice.authorize({ user_code: refusedRequest.user_code }, '/device'), tv);
    expect((await poll(refusedRequest.device_code)).error).toBe('authorization_pending');
    expect(await denials(tv.clientId)).toHaveLength(2);

    const granted = await start();
    const bob = new Browser(server);
    const page = await bob.submit(
      await bob.authorize({ user_code: granted.user_code }, '/device'),
      { username: 'bob', password: people.bob.password },
      '/device',
    );
    expect(page.status).toBe(200);
    const done = await bob.submit(page, { decision: 'approve' }, '/device');
    expect(done.status).toBe(200);
    expect((await poll(granted.device_code)).access_token).toBeDefined();
  });
});
