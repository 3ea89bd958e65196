import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import pino from 'pino';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { loadConfig } from '../../src/config/load.ts';
import { PluginLoadError } from '../../src/identity/loader.ts';
import { scimBackends } from '../../src/scim/backends.ts';
import { startServer } from '../../src/server.ts';
import { SPECIAL_NAME } from '../fixtures/ldap/directory.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { advanceClock, resetClock } from '../helpers/clock.ts';
import { eventually } from '../helpers/eventually.ts';
import { databaseKinds, freshDatabase, type DatabaseKind } from '../helpers/databases.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { basic, postForm } from '../helpers/http.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { backendConformance, type BackendFixture } from '../identity/conformance-suite.ts';
import { freshAddress, linkIn, MailServer, ResetBrowser } from '../password-reset/harness.ts';
import { Hops, locationOf, signInAtUpstream } from '../upstream/hops.ts';
import { PATCH_OP, SCIM_TYPE, USER_SCHEMA } from './harness.ts';

/**
 * Everything around the SCIM endpoint (docs/scim-provisioning.md "Setting up a SCIM backend", "Tokens",
 * "How SCIM users sign in"): the backends' settings checked at start, the tokens an administrator makes
 * and revokes, and the three ways a SCIM user signs in: a password, an invitation by mail, an upstream.
 */

// biome-ignore lint/suspicious/noExplicitAny: SCIM answers are read field by field by the expectations
type Json = any;

/** A SCIM request with `token`: the status and the parsed body. */
async function scim(
  server: TestServer,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${server.url}/scim/v2${path}`, {
    method,
    headers: {
      accept: SCIM_TYPE,
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': SCIM_TYPE }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Creates a SCIM user; fails with the answer unless it is 201. */
async function scimUser(server: TestServer, token: string, user: Record<string, unknown>): Promise<string> {
  const made = await scim(server, token, 'POST', '/Users', { schemas: [USER_SCHEMA], active: true, ...user });
  if (made.status !== 201) throw new Error(`POST /Users answered ${made.status}: ${JSON.stringify(made.body)}`);
  return String(made.body.id);
}

/** Deprovisions a SCIM user as Entra ID does: a PATCH of `active` to false. */
async function deactivate(server: TestServer, token: string, id: string): Promise<void> {
  const res = await scim(server, token, 'PATCH', `/Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
  });
  if (res.status !== 200 && res.status !== 204) throw new Error(`PATCH active answered ${res.status}: ${JSON.stringify(res.body)}`);
}

const CREATE = `mutation($backend: String!, $description: String) {
  createScimToken(backend: $backend, description: $description) { token scimToken { id backend description createdAt lastUsedAt } }
}`;

describe('SCIM backends are checked at start', () => {
  const config = (scimConfig: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    loadConfig(
      { LATCHKEY_CONFIG: undefined },
      {
        identity: {
          backends: [
            { id: 'local', plugin: 'database' },
            { id: 'hr', plugin: 'scim', config: scimConfig },
          ],
          upstreams: [{ id: 'partner', name: 'Partner', issuer: 'https://idp.example.com', clientId: 'id', clientSecret: 'secret' }],
        },
        ...extra,
      },
    );
  const smtp = { smtp: { url: 'smtp://127.0.0.1:2525', from: 'Latchkey <sso@example.com>' } };

  test('the settings of each scim backend, with their defaults', () => {
    expect(scimBackends(config({}))).toEqual([{ id: 'hr', invite: false }]);
    expect(scimBackends(config({ invite: true, linkUpstream: 'partner' }, smtp))).toEqual([
      { id: 'hr', invite: true, linkUpstream: 'partner' },
    ]);
  });

  test.each([
    [{ inviet: true }, {}, 'identity backend "hr" (plugin "scim"): invalid config: config.inviet: unknown key in config'],
    [{ invite: 'yes' }, {}, 'identity backend "hr" (plugin "scim"): invalid config: config.invite:'],
    [{ linkUpstream: 'entra' }, {}, 'config.linkUpstream: "entra" is not in identity.upstreams (the upstreams are: partner)'],
    [{ invite: true }, {}, 'config.invite: invitations are mailed, so smtp.url and smtp.from are required when invite is true'],
  ])('a bad setting stops the start with a message naming the backend and the key (%#)', (scimConfig, extra, message) => {
    expect(() => scimBackends(config(scimConfig, extra))).toThrow(PluginLoadError);
    expect(() => scimBackends(config(scimConfig, extra))).toThrow(message);
  });

  test('the server itself refuses to start with one', async () => {
    const db = await freshDatabase('sqlite');
    try {
      const bad = loadConfig(
        { LATCHKEY_CONFIG: undefined },
        {
          databaseUrl: db.url,
          secret: 'test-secret-test-secret-test-secret-0123',
          identity: {
            backends: [
              { id: 'local', plugin: 'database' },
              { id: 'hr', plugin: 'scim', config: { invite: true } },
            ],
          },
        },
      );
      await expect(startServer(bad, pino({ level: 'silent' }))).rejects.toThrow(
        /identity backend "hr" \(plugin "scim"\).*smtp\.url and smtp\.from/,
      );
    } finally {
      await db.drop();
    }
  });
});

describe.each(databaseKinds)('SCIM tokens and how SCIM users sign in on %s', (kind) => {
  let server: TestServer;
  let smtp: MailServer;
  let upstream: OidcUpstream;
  let adminToken: string;
  let hr: string;
  let contractors: string;

  const graphql = (query: string, variables?: Record<string, unknown>, token = adminToken) => graphqlPost(server, token, query, variables);
  const changes = async (action: string) =>
    (await server.sql('audit_events').where({ kind: 'admin.change' }).select('details', 'actor_user_id'))
      .map((r) => ({ ...(JSON.parse(String(r.details)) as { action: string }), actorUserId: r.actor_user_id as unknown }))
      .filter((d) => d.action === action);

  beforeAll(async () => {
    smtp = await MailServer.start();
    const port = await freePort();
    const home = `http://127.0.0.1:${port}`;
    upstream = await startOidcUpstream([`${home}/login/upstream/partner/callback`]);
    server = await startTestServer(kind, {
      port,
      publicUrl: home,
      smtp: { url: smtp.url, from: 'Latchkey <sso@example.com>' },
      identity: {
        backends: [
          { id: 'local', plugin: 'database' },
          { id: 'hr', plugin: 'scim', config: { invite: true, linkUpstream: 'partner' } },
          { id: 'contractors', plugin: 'scim' },
        ],
        upstreams: [
          {
            id: 'partner',
            name: 'Partner IdP',
            issuer: upstream.issuer,
            clientId: upstream.clientId,
            clientSecret: upstream.clientSecret,
            scopes: ['openid', 'profile', 'email', 'groups'],
            adminGroups: ['latchkey-admins'],
          },
        ],
      },
    });
    adminToken = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const make = async (backend: string) => (await graphql(CREATE, { backend })).data!.createScimToken as { token: string };
    hr = (await make('hr')).token;
    contractors = (await make('contractors')).token;
  });
  afterEach(() => resetClock());
  afterAll(async () => {
    await server?.stop();
    await upstream?.stop();
    await smtp?.close();
  });

  test('createScimToken shows the secret once and stores its SHA-256; scimTokens lists it without; both acts are audited', async () => {
    const made = await graphql(CREATE, { backend: 'hr', description: '  Entra ID provisioning ' });
    expect(made.errors).toBeUndefined();
    const { token, scimToken } = made.data!.createScimToken as { token: string; scimToken: Json };
    expect(token).toMatch(/^lks_scim_[A-Za-z0-9_-]{43}$/);
    expect(scimToken).toMatchObject({ backend: 'hr', description: 'Entra ID provisioning', lastUsedAt: null });
    expect(Date.parse(scimToken.createdAt)).toBeGreaterThan(Date.now() - 60_000);

    const row = await server.sql('scim_tokens').where({ id: scimToken.id }).first();
    expect(row.token_hash).toBe(createHash('sha256').update(token).digest('base64url'));
    expect(JSON.stringify(await server.sql('scim_tokens').select('*'))).not.toContain(token.slice(9));

    const listed = await graphql('{ scimTokens { id backend description createdBy createdAt lastUsedAt } }');
    const mine = (listed.data!.scimTokens as Json[]).find((t) => t.id === scimToken.id);
    expect(mine).toMatchObject({ backend: 'hr', description: 'Entra ID provisioning', createdBy: expect.any(String) });
    expect(JSON.stringify(listed)).not.toContain(token);

    const revoked = await graphql('mutation($id: ID!) { revokeScimToken(id: $id) }', { id: scimToken.id });
    expect(revoked.data).toEqual({ revokeScimToken: true });
    expect((await graphql('mutation($id: ID!) { revokeScimToken(id: $id) }', { id: scimToken.id })).data).toEqual({
      revokeScimToken: false,
    });

    const admin = (await server.ctx.users.findByUsername('local', 'admin'))!;
    expect(await changes('scim_token.create')).toEqual(
      expect.arrayContaining([
        // The permission the admin used and the role that gave it (docs/admin-api.md "Roles and permissions").
        {
          action: 'scim_token.create',
          via: 'graphql',
          permission: 'keys:manage',
          role: 'admin',
          scimTokenId: scimToken.id,
          backend: 'hr',
          actorUserId: admin.id,
        },
      ]),
    );
    expect(await changes('scim_token.revoke')).toEqual([
      {
        action: 'scim_token.revoke',
        via: 'graphql',
        permission: 'keys:manage',
        role: 'admin',
        scimTokenId: scimToken.id,
        backend: 'hr',
        actorUserId: admin.id,
      },
    ]);
  });

  test('a token is for a configured scim backend only, and only administrators make or see them', async () => {
    for (const backend of ['local', 'partner', 'nowhere']) {
      const refused = await graphql(CREATE, { backend });
      expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'backend' });
      expect(refused.errors?.[0]?.message).toContain(
        `"${backend}" is not a backend of plugin "scim"; the SCIM backends are: hr, contractors`,
      );
    }
    const long = await graphql(CREATE, { backend: 'hr', description: 'x'.repeat(201) });
    expect(long.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'description' });

    await server.user('plain', 'plain-password-1');
    const plain = (await adminCliToken(server, 'plain', 'plain-password-1')).access_token;
    for (const query of ['{ scimTokens { id } }', 'mutation { createScimToken(backend: "hr") { token } }']) {
      const answer = await graphql(query, undefined, plain);
      expect(answer.status).toBe(403);
      expect(answer.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    }
  });

  test('verify names the token and its backend, records its use at most once a minute, and nothing once revoked', async () => {
    const made = await server.ctx.scimTokens.create('contractors', 'verify', CLI_ACTOR);
    const { id } = made.scimToken;
    const lastUsed = async () => (await server.ctx.scimTokens.list()).find((t) => t.id === id)!.lastUsedAt;

    expect(await server.ctx.scimTokens.verify(made.token)).toEqual({ id, backend: 'contractors' });
    const first = await lastUsed();
    expect(first).toEqual(expect.any(Number));
    advanceClock(30_000);
    await server.ctx.scimTokens.verify(made.token);
    expect(await lastUsed()).toBe(first);
    advanceClock(31_000);
    await server.ctx.scimTokens.verify(made.token);
    expect(await lastUsed()).toBeGreaterThanOrEqual(first! + 60_000);

    for (const wrong of ['', 'lks_scim_', `${made.token}x`, made.token.replace('lks_scim_', 'lks_xxxx_'), `lks_scim_${'A'.repeat(43)}`]) {
      expect(await server.ctx.scimTokens.verify(wrong)).toBeUndefined();
    }

    // Over HTTP: the endpoint takes it, then refuses it the moment it is revoked.
    expect((await scim(server, made.token, 'GET', '/Users?count=1')).status).toBe(200);
    expect((await graphql('mutation($id: ID!) { revokeScimToken(id: $id) }', { id })).data).toEqual({ revokeScimToken: true });
    expect(await server.ctx.scimTokens.verify(made.token)).toBeUndefined();
    expect((await scim(server, made.token, 'GET', '/Users?count=1')).status).toBe(401);
  });

  describe('a password', () => {
    let client: { clientId: string; clientSecret: string | null };
    const grant = async (username: string, password: string) => {
      const res = await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'password', username, password, scope: 'openid' },
        { authorization: basic(client.clientId, client.clientSecret!) },
      );
      return { status: res.status, body: (await res.json()) as Json };
    };
    beforeAll(async () => {
      client = await server.client({ grantTypes: ['password'], scopes: ['openid'] });
    });

    test('set by the SCIM client: it signs in; an administrator sets another; deprovisioned, it is refused', async () => {
      const id = await scimUser(server, hr, {
        userName: 'pia',
        password: 'pia-scim-password-1',
        emails: [{ value: 'pia@example.com', primary: true }],
      });
      const pia = (await server.ctx.users.find(id))!;
      expect(pia).toMatchObject({ backend: 'hr', username: 'pia' });
      expect(pia.passwordHash).toMatch(/^\$argon2id\$/);
      const first = await grant('PIA', 'pia-scim-password-1');
      expect(first.status).toBe(200);
      expect(decodeJwt(first.body.id_token).sub).toBe(id);
      expect((await grant('pia', 'not-her-password')).body.error_description).toBe('invalid username or password');

      const set = await graphql('mutation($id: ID!, $p: String!) { setUserPassword(id: $id, password: $p) }', {
        id,
        p: 'pia-admin-password-2',
      });
      expect(set.data).toEqual({ setUserPassword: true });
      expect((await grant('pia', 'pia-scim-password-1')).status).toBe(400);
      expect((await grant('pia', 'pia-admin-password-2')).status).toBe(200);
      const short = await graphql('mutation($id: ID!) { setUserPassword(id: $id, password: "short") }', { id });
      expect(short.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'password' });

      await deactivate(server, hr, id);
      expect(await grant('pia', 'pia-admin-password-2')).toEqual({
        status: 400,
        body: { error: 'invalid_grant', error_description: 'the account is disabled' },
      });
    });
  });

  describe('an invitation', () => {
    const invited = async (userId: string) =>
      (await server.sql('audit_events').where({ kind: 'password_reset.requested', user_id: userId }).select('details')).map(
        (r) => JSON.parse(String(r.details)) as Json,
      );

    test('mailed to a user created active with an email and no password; its link sets the password, which then signs in', async () => {
      // Mailed one at a time, in order: once ivy's has come, these would have come before it.
      const withPassword = await scimUser(server, hr, {
        userName: 'quinn',
        password: 'quinn-password-1',
        emails: [{ value: 'quinn@example.com' }],
      });
      const inactive = await scimUser(server, hr, { userName: 'rory', active: false, emails: [{ value: 'rory@example.com' }] });
      const elsewhere = await scimUser(server, contractors, { userName: 'sam', emails: [{ value: 'sam@example.com' }] });
      const ivy = await scimUser(server, hr, { userName: 'ivy', emails: [{ value: 'ivy@example.com', type: 'work', primary: true }] });

      const mail = await smtp.nth('ivy@example.com', 1);
      const host = new URL(server.url).host;
      expect(mail.subject).toBe(`You have been invited to ${host}`);
      expect(mail.text).toContain(`You have been invited to ${host}, with the account "ivy".`);
      expect(mail.text).toContain('set your password, open this link within 7 days');
      for (const to of ['quinn@example.com', 'rory@example.com', 'sam@example.com']) expect(smtp.to(to)).toEqual([]);
      for (const userId of [withPassword, inactive, elsewhere]) expect(await invited(userId)).toEqual([]);
      expect(await invited(ivy)).toEqual([{ outcome: 'sent', invitation: true, backend: 'hr' }]);

      const { token } = linkIn(mail);
      // Only its hash is stored, and it lives 7 days.
      const row = await server.sql('password_reset_tokens').where({ user_id: ivy }).first();
      expect(row.token_hash).toBe(createHash('sha256').update(token).digest('base64url'));
      expect(Number(row.expires_at) - Number(row.created_at)).toBe(7 * 24 * 3600_000);

      // "Forgot your password?" is off here: the reset page serves the invitation all the same.
      const browser = new ResetBrowser(server, freshAddress());
      expect((await browser.open('/password/forgot')).status).toBe(404);
      advanceClock(6 * 24 * 3600_000);
      const form = await browser.open(`/password/reset?token=${token}`);
      expect(form.status).toBe(200);
      expect(form.html).toContain('id="reset-username">ivy<');
      const done = await browser.reset(token, { password: 'ivy-chosen-password', confirm: 'ivy-chosen-password' });
      expect(done.status).toBe(200);
      expect((await server.ctx.users.find(ivy))!.passwordHash).toMatch(/^\$argon2id\$/);
      await expect(adminCliToken(server, 'ivy', 'ivy-chosen-password')).resolves.toHaveProperty('access_token');
      // Used once.
      expect((await browser.open(`/password/reset?token=${token}`)).status).toBe(400);
    });

    test('a link not used within 7 days is dead; a user deprovisioned before using it loses it at once', async () => {
      await scimUser(server, hr, { userName: 'tess', emails: [{ value: 'tess@example.com' }] });
      const late = linkIn(await smtp.nth('tess@example.com', 1)).token;
      const uma = await scimUser(server, hr, { userName: 'uma', emails: [{ value: 'uma@example.com' }] });
      const gone = linkIn(await smtp.nth('uma@example.com', 1)).token;
      await deactivate(server, hr, uma);
      const browser = new ResetBrowser(server, freshAddress());
      const dead = await browser.open(`/password/reset?token=${gone}`);
      expect(dead.status).toBe(400);

      advanceClock(7 * 24 * 3600_000 + 1000);
      const expired = await browser.open(`/password/reset?token=${late}`);
      expect(expired.status).toBe(400);
      // With resets off, nobody can ask for a new link: the page does not send them to the form.
      expect(expired.html).toContain('Ask your administrator for a new one.');
      expect(expired.html).not.toContain('href="/password/forgot"');
    });
  });

  describe('an upstream', () => {
    /** Authorize with `idp=partner`, sign `account` in at the upstream, come back: the answer of the callback. */
    async function viaUpstream(account: string): Promise<{ status: number; sub?: string; html: string }> {
      const client = await server.client({ scopes: ['openid', 'profile', 'email'] });
      const hops = new Hops();
      const url = `${server.url}/oauth/v20/authorize?${new URLSearchParams({
        client_id: client.clientId,
        redirect_uri: client.redirectUri,
        response_type: 'code',
        scope: 'openid profile email',
        state: 'st',
        nonce: 'n',
        idp: 'partner',
      })}`;
      const away = await hops.get(url);
      expect(away.status).toBe(303);
      const callback = await signInAtUpstream(hops, locationOf(away, url), account, server.url);
      const back = await hops.get(callback);
      if (back.status !== 303) return { status: back.status, html: await back.text() };
      const done = await hops.get(locationOf(back, callback));
      const code = new URL(done.headers.get('location')!).searchParams.get('code')!;
      const tokens = (await (await exchangeCode(server, client, code)).json()) as { id_token: string };
      return { status: 200, sub: String(decodeJwt(tokens.id_token).sub), html: '' };
    }
    const upstreamRecords = async () => (await server.sql('users').where({ backend: 'partner' }).select('username')).map((r) => r.username);

    test('signs in as the SCIM user its username claim names, as provisioned; a deprovisioned one is refused', async () => {
      const id = await scimUser(server, hr, {
        userName: 'Ann@Example.com',
        password: 'ann-scim-password-1',
        emails: [{ value: 'ann@example.com' }],
      });
      const groups = await scim(server, hr, 'POST', '/Groups', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
        displayName: 'sales',
        members: [{ value: id }],
      });
      expect(groups.status).toBe(201);
      const before = (await server.ctx.users.find(id))!;
      upstream.accounts.set('u-ann', {
        sub: 'u-ann',
        preferred_username: 'ann@example.com',
        email: 'ann@example.com',
        email_verified: true,
        name: 'Ann at the upstream',
        groups: ['latchkey-admins', 'upstream-only'],
      });

      const signedIn = await viaUpstream('u-ann');
      expect(signedIn).toMatchObject({ status: 200, sub: id });
      // The SCIM record as it was: no name, group or admin role of the upstream's; no upstream record.
      const after = (await server.ctx.users.find(id))!;
      expect(after).toEqual(before);
      expect(after.groups).toEqual(['sales']);
      expect(after.roles).toEqual([]);
      expect(await upstreamRecords()).toEqual([]);
      const success = await server.sql('audit_events').where({ kind: 'login.success', user_id: id }).orderBy('id', 'desc').first();
      expect(JSON.parse(success.details)).toMatchObject({ upstream: 'partner', linked: 'hr', amr: ['fed'] });

      await deactivate(server, hr, id);
      const refused = await viaUpstream('u-ann');
      expect(refused.status).toBe(400);
      expect(refused.html).toContain('this account is disabled here');
      expect(await upstreamRecords()).toEqual([]);
    });

    test('by its verified email only when it sends no username claim; someone no SCIM user matches is an ordinary upstream user', async () => {
      const bob = await scimUser(server, hr, { userName: 'BOB@example.com', emails: [{ value: 'bob@example.com' }] });
      upstream.accounts.set('u-bob', { sub: 'u-bob', email: 'bob@example.com', email_verified: true });
      expect(await viaUpstream('u-bob')).toMatchObject({ status: 200, sub: bob });
      // A username claim of its own names someone else: the email is never a second way in.
      upstream.accounts.set('u-bobby', { sub: 'u-bobby', preferred_username: 'bobby', email: 'bob@example.com', email_verified: true });
      const bobby = await viaUpstream('u-bobby');
      expect(bobby.status).toBe(200);
      expect(bobby.sub).not.toBe(bob);

      // An unverified email links nobody.
      await scimUser(server, hr, { userName: 'cleo@example.com', emails: [{ value: 'cleo@example.com' }] });
      upstream.accounts.set('u-cleo', { sub: 'u-cleo', preferred_username: 'cleo.p', email: 'cleo@example.com', email_verified: false });
      // contractors does not link the upstream: its dora is not partner's dora.
      const dora = await scimUser(server, contractors, { userName: 'dora', emails: [{ value: 'dora@example.com' }] });
      upstream.accounts.set('u-dora', { sub: 'u-dora', preferred_username: 'dora', email: 'dora@elsewhere.example', email_verified: true });
      const cleo = await viaUpstream('u-cleo');
      const other = await viaUpstream('u-dora');
      expect(cleo.status).toBe(200);
      expect(other.status).toBe(200);
      expect(other.sub).not.toBe(dora);
      expect((await upstreamRecords()).sort()).toEqual(['bobby@partner', 'cleo.p@partner', 'dora@partner']);
    });

    test('a user the client deleted or deprovisioned is refused, never signed in as an ordinary upstream user', async () => {
      const gail = await scimUser(server, hr, { userName: 'gail@example.com', password: 'gail-scim-password-1' });
      upstream.accounts.set('u-gail', {
        sub: 'u-gail',
        preferred_username: 'Gail@example.com',
        email: 'gail@example.com',
        email_verified: true,
      });
      expect(await viaUpstream('u-gail')).toMatchObject({ status: 200, sub: gail });
      expect((await scim(server, hr, 'DELETE', `/Users/${gail}`)).status).toBe(204);
      const deleted = await viaUpstream('u-gail');
      expect(deleted.status).toBe(400);
      expect(deleted.html).toContain('this account is disabled here');
      expect((await upstreamRecords()).filter((n) => n.startsWith('gail'))).toEqual([]);
      const failure = await server.sql('audit_events').where({ kind: 'login.failure', user_id: gail }).first();
      expect(JSON.parse(failure.details)).toMatchObject({ upstream: 'partner', reason: 'this account is disabled here' });

      // Hired again: the new record of the name signs in; deprovisioned, it is refused too.
      const again = await scimUser(server, hr, { userName: 'gail@example.com' });
      expect(await viaUpstream('u-gail')).toMatchObject({ status: 200, sub: again });
      await deactivate(server, hr, again);
      expect((await viaUpstream('u-gail')).status).toBe(400);
      expect((await upstreamRecords()).filter((n) => n.startsWith('gail'))).toEqual([]);
    });
  });
});

describe('SCIM invitations are queued in the database', () => {
  test('an invitation not mailed before a restart is mailed by the next start', async () => {
    const smtp = await MailServer.start();
    const db = await freshDatabase('sqlite');
    const settings = {
      host: '127.0.0.1',
      databaseUrl: db.url,
      secret: 'test-secret-test-secret-test-secret-0123',
      admin: { username: 'admin', password: ADMIN_PASSWORD },
      smtp: { url: smtp.url, from: 'Latchkey <sso@example.com>' },
      identity: {
        backends: [
          { id: 'local', plugin: 'database' },
          { id: 'hr', plugin: 'scim', config: { invite: true } },
        ],
      },
    };
    const start = async () => {
      const port = await freePort();
      return startServer(
        loadConfig({ LATCHKEY_CONFIG: undefined }, { ...settings, port, publicUrl: `http://127.0.0.1:${port}` }),
        pino({ level: 'silent' }),
      );
    };
    let running = await start();
    try {
      const { token } = await running.ctx.scimTokens.create('hr', 'restart', CLI_ACTOR);
      const asServer = running as unknown as TestServer;
      // The mail server hangs: the first invitation is being mailed when the server stops, the second waits behind it.
      await smtp.stop('hang');
      const first = await scimUser(asServer, token, { userName: 'wren', emails: [{ value: 'wren@example.com' }] });
      const second = await scimUser(asServer, token, { userName: 'xena', emails: [{ value: 'xena@example.com' }] });
      await eventually('the first invitation at the hanging mail server', async () => smtp.hanging > 0);
      await running.close();
      await smtp.start();

      running = await start();
      const mail = await smtp.nth('xena@example.com', 1);
      expect(mail.subject).toMatch(/^You have been invited to /);
      await eventually('the queue emptied', async () => (await running.sql('scim_invitations').select('user_id')).length === 0);
      const audited = await running.sql('audit_events').where({ kind: 'password_reset.requested', user_id: second });
      expect(audited).toHaveLength(1);
      // The one the hanging server was mailing was tried and failed: recorded, not sent twice.
      expect(await running.sql('audit_events').where({ kind: 'password_reset.mail_failed', user_id: first })).toHaveLength(1);
      expect(smtp.to('wren@example.com')).toEqual([]);
    } finally {
      await running.close();
      await db.drop();
      await smtp.close();
    }
  });
});

/** The scim backend answers the password grant exactly as the database and LDAP backends do. */
async function scimFixture(kind: DatabaseKind): Promise<BackendFixture> {
  const server = await startTestServer(kind, {
    identity: {
      backends: [
        { id: 'hr', plugin: 'scim' },
        { id: 'local', plugin: 'database' },
      ],
    },
  });
  const { token } = await server.ctx.scimTokens.create('hr', 'conformance', CLI_ACTOR);
  const accounts = {
    active: { username: 'alice', password: 'alice-scim-pw' },
    disabled: { username: 'carol', password: 'carol-scim-pw' },
    special: { username: SPECIAL_NAME, password: 'special-scim-pw' },
  };
  for (const a of Object.values(accounts)) {
    const id = await scimUser(server, token, { userName: a.username, password: a.password });
    if (a === accounts.disabled) await deactivate(server, token, id);
  }
  return { server, backendId: 'hr', ...accounts, stop: () => server.stop() };
}

for (const kind of databaseKinds) backendConformance(`scim on ${kind}`, () => scimFixture(kind));
