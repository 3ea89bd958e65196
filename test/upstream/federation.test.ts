import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { graphqlPost, adminCliToken } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { startSamlSp } from '../helpers/saml-sp.ts';
import { Hops, locationOf, signInAtUpstream } from './hops.ts';

/**
 * docs/upstream-identity-providers.md against node-oidc-provider: "Sign in with <name>" on the login page, `idp=`, the local user
 * keyed by (upstream, sub), adminGroups, allowedDomains, Latchkey's MFA and consent after the
 * upstream, `amr` with `fed`, and the callback's refusals (replayed, forged, no code, an error answer).
 */
describe.each(databaseKinds)('upstream identity providers on %s', (kind) => {
  let server: TestServer;
  let upstream: OidcUpstream;

  beforeAll(async () => {
    const port = await freePort();
    const home = `http://127.0.0.1:${port}`;
    upstream = await startOidcUpstream([
      `${home}/login/upstream/partner/callback`,
      `${home}/login/upstream/strict/callback`,
      `${home}/login/upstream/entra/callback`,
    ]);
    const common = {
      issuer: upstream.issuer,
      clientId: upstream.clientId,
      clientSecret: upstream.clientSecret,
      scopes: ['openid', 'profile', 'email', 'groups'],
    };
    server = await startTestServer(kind, {
      port,
      publicUrl: home,
      identity: {
        upstreams: [
          { id: 'partner', name: 'Partner IdP', ...common, adminGroups: ['latchkey-admins'] },
          { id: 'strict', name: 'Strict IdP', ...common, allowedDomains: ['example.com'], trustMfa: true },
          // Like Entra ID: it sends no email_verified, and the operator vouches for its addresses.
          { id: 'entra', name: 'Entra-like IdP', ...common, trustEmail: true },
        ],
      },
    });
    upstream.accounts.set('u-ann', {
      sub: 'u-ann',
      preferred_username: 'ann',
      email: 'ann@example.com',
      email_verified: true,
      name: 'Ann Upstream',
      groups: ['staff'],
    });
    upstream.accounts.set('u-boss', {
      sub: 'u-boss',
      preferred_username: 'boss',
      email: 'boss@example.com',
      email_verified: true,
      groups: ['latchkey-admins'],
    });
    upstream.accounts.set('u-out', { sub: 'u-out', preferred_username: 'outsider', email: 'out@elsewhere.org', email_verified: true });
    upstream.accounts.set('u-mfa', {
      sub: 'u-mfa',
      preferred_username: 'strong',
      email: 'strong@example.com',
      email_verified: true,
      amr: ['pwd', 'otp', 'mfa'],
    });
    // A local account whose name an upstream user also has: it must stay untouched.
    await server.user('clash', 'clash-password-1', { email: 'clash@local.test' });
    upstream.accounts.set('u-clash', { sub: 'u-clash', preferred_username: 'clash', email: 'clash@example.com', email_verified: true });
  });
  afterAll(async () => {
    await server?.stop();
    await upstream?.stop();
  });

  const authorizeUrl = (client: { clientId: string; redirectUri: string }, extra: Record<string, string> = {}) =>
    `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', scope: 'openid profile email', state: 'st', nonce: 'n-1', ...extra })}`;

  /** Authorize → login page → "Sign in with <name>" → the upstream's login → the callback URL. */
  async function toCallback(hops: Hops, url: string, upstreamName: string, account: string): Promise<string> {
    const page = await hops.get(url);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`Sign in with ${upstreamName}`);
    const away = await hops.submitForm(url, html, new RegExp(`Sign in with ${upstreamName}`));
    if (away.status !== 303) throw new Error(`expected the redirect to the upstream, got ${away.status}: ${await away.text()}`);
    return signInAtUpstream(hops, locationOf(away, url), account, server.url);
  }

  /** Back at Latchkey: the callback, then the original request. */
  async function back(hops: Hops, callback: string): Promise<Response> {
    const res = await hops.get(callback);
    expect(res.status).toBe(303);
    return hops.get(locationOf(res, callback));
  }

  test('the login page offers each upstream; the code flow through one ends with Latchkey tokens whose amr has fed', async () => {
    const client = await server.client({ scopes: ['openid', 'profile', 'email'] });
    const hops = new Hops();
    const callback = await toCallback(hops, authorizeUrl(client), 'Partner IdP', 'u-ann');
    expect(callback).toMatch(new RegExp(`^${server.url}/login/upstream/partner/callback\\?`));
    const done = await back(hops, callback);
    expect(done.status).toBe(302);
    const q = Object.fromEntries(new URL(done.headers.get('location')!).searchParams);
    expect(q.state).toBe('st');
    const tokens = (await (await exchangeCode(server, client, q.code!)).json()) as { id_token: string; access_token: string };
    const claims = decodeJwt(tokens.id_token);
    expect(claims.amr).toContain('fed');
    expect(claims.nonce).toBe('n-1');
    // Qualified by the upstream's id: no app keying on names can take ann for a local ann.
    expect(claims.preferred_username).toBe('ann@partner');
    expect(claims.email).toBe('ann@example.com');

    const user = await server.ctx.users.find(String(claims.sub));
    expect(user).toMatchObject({
      backend: 'partner',
      externalId: 'u-ann',
      username: 'ann@partner',
      displayName: 'Ann Upstream',
      groups: ['staff'],
      roles: [],
    });
    const success = await server.sql('audit_events').where({ kind: 'login.success', user_id: user!.id }).first();
    expect(JSON.parse(success.details)).toMatchObject({ upstream: 'partner', amr: ['fed'] });
  });

  test('the same upstream subject keeps its userid across sign-ins and renames; attributes and groups are refreshed', async () => {
    const client = await server.client();
    const signIn = async () => {
      const hops = new Hops();
      const done = await back(hops, await toCallback(hops, authorizeUrl(client), 'Partner IdP', 'u-ann'));
      const { code } = Object.fromEntries(new URL(done.headers.get('location')!).searchParams);
      const tokens = (await (await exchangeCode(server, client, code!)).json()) as { id_token: string };
      return String(decodeJwt(tokens.id_token).sub);
    };
    const first = await signIn();
    upstream.accounts.set('u-ann', {
      sub: 'u-ann',
      preferred_username: 'ann.renamed',
      email: 'ann@example.com',
      email_verified: true,
      name: 'Ann Renamed',
      groups: ['staff', 'ops'],
    });
    const second = await signIn();
    expect(second).toBe(first);
    expect(await server.ctx.users.find(second)).toMatchObject({
      username: 'ann.renamed@partner',
      displayName: 'Ann Renamed',
      groups: ['staff', 'ops'],
    });
  });

  test('idp= skips the chooser and goes straight to that upstream; an unknown idp is invalid_request', async () => {
    const client = await server.client();
    const hops = new Hops();
    const away = await hops.get(authorizeUrl(client, { idp: 'partner' }));
    expect(away.status).toBe(303);
    const to = new URL(locationOf(away, server.url));
    expect(to.origin).toBe(upstream.issuer);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('state')).toBeTruthy();
    expect(to.searchParams.get('nonce')).toBeTruthy();
    expect(to.searchParams.get('redirect_uri')).toBe(`${server.url}/login/upstream/partner/callback`);
    const done = await back(hops, await signInAtUpstream(hops, to.href, 'u-ann', server.url));
    expect(new URL(done.headers.get('location')!).searchParams.get('code')).toBeTruthy();

    const unknown = await new Hops().get(authorizeUrl(client, { idp: 'nobody' }));
    expect(unknown.status).toBe(302);
    const err = Object.fromEntries(new URL(unknown.headers.get('location')!).searchParams);
    expect(err).toMatchObject({ error: 'invalid_request', state: 'st' });
    expect(err.error_description).toContain('nobody');
  });

  test('adminGroups grant the admin role; a local account of the same name is neither linked nor touched', async () => {
    const client = await server.client();
    const hops = new Hops();
    await back(hops, await toCallback(hops, authorizeUrl(client), 'Partner IdP', 'u-boss'));
    const boss = await server.ctx.users.page({ first: 100, search: 'boss' });
    expect(boss.edges.map((e) => e.node)).toEqual([expect.objectContaining({ backend: 'partner', roles: ['admin'] })]);

    const clashHops = new Hops();
    await back(clashHops, await toCallback(clashHops, authorizeUrl(client), 'Partner IdP', 'u-clash'));
    const both = (await server.ctx.users.page({ first: 100, search: 'clash' })).edges.map((e) => e.node);
    expect(both).toHaveLength(2);
    expect(both.find((u) => u.backend === 'local')).toMatchObject({ username: 'clash', email: 'clash@local.test', disabled: false });
    expect(both.find((u) => u.backend === 'partner')).toMatchObject({ username: 'clash@partner', externalId: 'u-clash' });
    // The local password still signs the local account in.
    await expect(adminCliToken(server, 'clash', 'clash-password-1')).resolves.toHaveProperty('access_token');
  });

  test('allowedDomains refuses a user of another email domain: a 400 page naming the upstream, no session', async () => {
    const client = await server.client();
    const hops = new Hops();
    const callback = await toCallback(hops, authorizeUrl(client), 'Strict IdP', 'u-out');
    const res = await hops.get(callback);
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain('Sign-in with Strict IdP failed');
    expect(html).toContain('elsewhere.org');
    expect(hops.jar(server.url).has('lk_sso')).toBe(false);
    const failure = await server.sql('audit_events').where({ kind: 'login.failure' }).orderBy('id', 'desc').first();
    expect(JSON.parse(failure.details)).toMatchObject({ upstream: 'strict' });
  });

  test('a client that requires MFA asks for Latchkey second factor unless the upstream is trusted and said mfa', async () => {
    const client = await server.client({ requireMfa: true });
    const hops = new Hops();
    const page = await back(hops, await toCallback(hops, authorizeUrl(client), 'Partner IdP', 'u-ann'));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('needs a second factor');

    const trusted = new Hops();
    const done = await back(trusted, await toCallback(trusted, authorizeUrl(client), 'Strict IdP', 'u-mfa'));
    const success = await server.sql('audit_events').where({ kind: 'login.success' }).orderBy('id', 'desc').first();
    expect(JSON.parse(success.details)).toMatchObject({ upstream: 'strict', upstreamAmr: ['pwd', 'otp', 'mfa'] });
    expect(done.status).toBe(302);
    const { code } = Object.fromEntries(new URL(done.headers.get('location')!).searchParams);
    const tokens = (await (await exchangeCode(server, client, code!)).json()) as { id_token: string };
    expect(decodeJwt(tokens.id_token).amr).toEqual(['fed', 'mfa']);
  });

  test('consent is still Latchkey own after the upstream', async () => {
    const client = await server.client({ requireConsent: true });
    const hops = new Hops();
    const page = await back(hops, await toCallback(hops, authorizeUrl(client), 'Partner IdP', 'u-ann'));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Allow access?');
  });

  test('prompt=login and max_age=0 are answered by the upstream sign-in: back here, consent, then the code, with no second round', async () => {
    const client = await server.client({ requireConsent: true, scopes: ['openid', 'profile', 'email'] });
    const hops = new Hops();
    const url = authorizeUrl(client, { prompt: 'login', max_age: '0' });
    const page = await back(hops, await toCallback(hops, url, 'Partner IdP', 'u-ann'));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('Allow access?');
    // The consent form still says prompt=login and max_age=0: the sign-in it follows answered them.
    const done = await hops.submitForm(url, html, /name="_action" value="consent"/, { decision: 'allow' });
    expect(done.status).toBe(303);
    const { code } = Object.fromEntries(new URL(done.headers.get('location')!).searchParams);
    expect((await exchangeCode(server, client, code!)).status).toBe(200);
    // Once used, the next request with prompt=login asks for the sign-in again.
    const again = await hops.get(url);
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('Sign in with Partner IdP');
  });

  test('SAML ForceAuthn through an upstream: back from the callback, the assertion is sent, with no second login page', async () => {
    const metadata = await (await fetch(`${server.url}/saml/v20/metadata`)).text();
    const b64 = /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!;
    const idpCert = `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
    const sp = await startSamlSp({ idpUrl: server.url, idpCert });
    try {
      const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
      const registered = await graphqlPost(
        server,
        access_token,
        'mutation R($xml: String) { registerSamlServiceProvider(metadataXml: $xml) { entityId } }',
        { xml: sp.metadataXml },
      );
      expect(registered.errors).toBeUndefined();
      (sp.saml.options as { forceAuthn: boolean }).forceAuthn = true;
      const hops = new Hops();
      const ssoUrl = locationOf(await hops.get(`${sp.url}/login`), sp.url);
      const page = await back(hops, await toCallback(hops, ssoUrl, 'Partner IdP', 'u-ann'));
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).not.toContain('name="password"');
      expect(html).toContain('SAMLResponse');
    } finally {
      await sp.stop();
    }
  });

  test('a replayed callback, a forged state, a missing code and an error answer: 400 pages naming the upstream, no session', async () => {
    const client = await server.client();
    const hops = new Hops();
    const callback = await toCallback(hops, authorizeUrl(client), 'Partner IdP', 'u-ann');
    expect((await hops.get(callback)).status).toBe(303);

    // Replayed, in a browser that has no session yet (the same cookie, the round trip used).
    const replayer = new Hops();
    replayer.jar(server.url).store(new Response(null, { headers: { 'set-cookie': `lk_upstream=${'x'.repeat(43)}` } }));
    const replayed = await replayer.get(callback);
    expect(replayed.status).toBe(400);
    expect(await replayed.text()).toContain('Sign-in with Partner IdP failed');

    const cases: Array<(url: URL) => void> = [
      (u) => u.searchParams.set('state', 'forged-state'),
      (u) => u.searchParams.delete('code'),
      (u) => {
        u.searchParams.delete('code');
        u.searchParams.set('error', 'access_denied');
      },
    ];
    for (const change of cases) {
      const browser = new Hops();
      const url = new URL(await toCallback(browser, authorizeUrl(client), 'Partner IdP', 'u-ann'));
      change(url);
      const res = await browser.get(url.href);
      expect(res.status).toBe(400);
      const html = await res.text();
      expect(html).toContain('Partner IdP');
      expect(html).not.toMatch(/at .*\.ts:\d+/);
      expect(browser.jar(server.url).has('lk_sso')).toBe(false);
    }
    const refused = await server.sql('audit_events').where({ kind: 'login.failure' }).select('details');
    const reasons = refused
      .map((r) => JSON.parse(r.details))
      .filter((d) => d.upstream === 'partner')
      .map((d) => d.reason as string);
    expect(reasons).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/already used|not started/),
        expect.stringMatching(/no authorization code/),
        expect.stringMatching(/access_denied|refused/),
      ]),
    );
  });

  test('the account page signs in through an upstream too, and comes back to itself', async () => {
    const hops = new Hops();
    const callback = await toCallback(hops, `${server.url}/account`, 'Partner IdP', 'u-ann');
    const res = await hops.get(callback);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/account');
    const account = await hops.get(`${server.url}/account`);
    expect(account.status).toBe(200);
    expect(await account.text()).toContain('ann');
  });

  test('the device page signs in through an upstream, and comes back to approve the device', async () => {
    const cli = await server.client({
      name: 'Dev CLI',
      confidential: false,
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
      redirectUris: [],
      scopes: ['openid'],
    });
    const started = (await (
      await fetch(`${server.url}/oauth/v20/device_authorization`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: cli.clientId, scope: 'openid' }),
      })
    ).json()) as { user_code: string };
    const hops = new Hops();
    const callback = await toCallback(
      hops,
      `${server.url}/device?${new URLSearchParams({ user_code: started.user_code })}`,
      'Partner IdP',
      'u-ann',
    );
    const approval = await back(hops, callback);
    expect(approval.status).toBe(200);
    const html = await approval.text();
    expect(html).toContain('Dev CLI');
    expect(html).toMatch(/name="decision" value="approve"/);
  });

  /** Signs `account` in through `upstreamName` with the code flow: the local user it got. */
  async function signedInUser(upstreamName: string, account: string) {
    const client = await server.client({ scopes: ['openid', 'profile', 'email'] });
    const hops = new Hops();
    const done = await back(hops, await toCallback(hops, authorizeUrl(client), upstreamName, account));
    const { code } = Object.fromEntries(new URL(done.headers.get('location')!).searchParams);
    const tokens = (await (await exchangeCode(server, client, code!)).json()) as { id_token: string };
    return (await server.ctx.users.find(String(decodeJwt(tokens.id_token).sub)))!;
  }

  test('an email is taken only when the upstream verified it; trustEmail takes one sent without email_verified', async () => {
    upstream.accounts.set('u-silent', { sub: 'u-silent', preferred_username: 'silent', email: 'silent@example.com' });
    upstream.accounts.set('u-unverified', {
      sub: 'u-unverified',
      preferred_username: 'unverified',
      email: 'unverified@example.com',
      email_verified: false,
    });
    expect(await signedInUser('Partner IdP', 'u-silent')).toMatchObject({ username: 'silent@partner', email: null });
    expect(await signedInUser('Partner IdP', 'u-unverified')).toMatchObject({ email: null });
    expect(await signedInUser('Entra-like IdP', 'u-silent')).toMatchObject({
      backend: 'entra',
      username: 'silent@entra',
      email: 'silent@example.com',
    });
    expect(await signedInUser('Entra-like IdP', 'u-unverified')).toMatchObject({ email: null });
  });

  test('two upstream users with one name: the second gets a name from its sub, and neither is locked out', async () => {
    upstream.accounts.set('u-first', { sub: 'u-first', preferred_username: 'same', email: 'first@example.com', email_verified: true });
    upstream.accounts.set('u-second', { sub: 'u-second', preferred_username: 'same', email: 'second@example.com', email_verified: true });
    const first = await signedInUser('Partner IdP', 'u-first');
    expect(first).toMatchObject({ username: 'same@partner', disabled: false });
    expect(await signedInUser('Partner IdP', 'u-second')).toMatchObject({ username: 'sub-u-second@partner', disabled: false });
    // The first still holds its name, enabled, and signs in as before.
    expect(await signedInUser('Partner IdP', 'u-first')).toMatchObject({ id: first.id, username: 'same@partner', disabled: false });
  });

  test('at a SAML app, an upstream user is not a local user of the same name, and no password class is claimed', async () => {
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
    const entityId = `https://wiki-${kind}.example.com/saml`;
    const registered = await graphqlPost(
      server,
      access_token,
      'mutation($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId } }',
      {
        input: {
          entityId,
          assertionConsumerServiceUrls: [`https://wiki-${kind}.example.com/acs`],
          nameIdFormat: 'UNSPECIFIED',
          attributes: ['uid'],
          allowIdpInitiated: true,
        },
      },
    );
    expect(registered.errors).toBeUndefined();
    const hops = new Hops();
    const sso = `${server.url}/saml/v20/sso?${new URLSearchParams({ sp: entityId })}`;
    const page = await back(hops, await toCallback(hops, sso, 'Partner IdP', 'u-clash'));
    expect(page.status).toBe(200);
    const response = /name="SAMLResponse" value="([^"]+)"/.exec(await page.text())![1]!;
    const xml = Buffer.from(response, 'base64').toString('utf8');
    expect(xml).toMatch(/<saml:NameID [^>]*>clash@partner<\/saml:NameID>/);
    expect(xml).toContain('<saml:AttributeValue xsi:type="xs:string">clash@partner</saml:AttributeValue>');
    expect(xml).toContain('<saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified</saml:AuthnContextClassRef>');
  });

  test('an upstream user with a local user\'s email: kept unverified, never email_verified, an email NameID or mail (docs/decisions.md "Upstream emails")', async () => {
    await server.user('alice', 'alice-password-1', { email: 'alice@example.com' });
    upstream.accounts.set('u-mallory', {
      sub: 'u-mallory',
      preferred_username: 'mallory',
      email: 'Alice@Example.com',
      email_verified: true,
    });
    // OIDC: the address is there, but not as verified.
    const client = await server.client({ scopes: ['openid', 'profile', 'email'] });
    const hops = new Hops();
    const done = await back(hops, await toCallback(hops, authorizeUrl(client), 'Partner IdP', 'u-mallory'));
    const code = new URL(done.headers.get('location')!).searchParams.get('code')!;
    const tokens = (await (await exchangeCode(server, client, code)).json()) as { id_token: string; access_token: string };
    expect(decodeJwt(tokens.id_token)).toMatchObject({ email: 'Alice@Example.com', email_verified: false });
    const userinfo = await (
      await fetch(`${server.url}/connect/v10/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
    ).json();
    expect(userinfo).toMatchObject({ email_verified: false });
    // SAML: an email-NameID SP gets the upstream user's own name, and no mail attribute.
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
    const entityId = `https://mail-${kind}.example.com/saml`;
    const registered = await graphqlPost(
      server,
      access_token,
      'mutation($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId } }',
      {
        input: {
          entityId,
          assertionConsumerServiceUrls: [`https://mail-${kind}.example.com/acs`],
          nameIdFormat: 'EMAIL_ADDRESS',
          attributes: ['uid', 'mail'],
          allowIdpInitiated: true,
        },
      },
    );
    expect(registered.errors).toBeUndefined();
    const page = await hops.get(`${server.url}/saml/v20/sso?${new URLSearchParams({ sp: entityId })}`);
    const xml = Buffer.from(/name="SAMLResponse" value="([^"]+)"/.exec(await page.text())![1]!, 'base64').toString('utf8');
    expect(xml).toMatch(/<saml:NameID [^>]*>mallory@partner<\/saml:NameID>/);
    expect(xml.toLowerCase()).not.toContain('alice@example.com');
  });

  test('an upstream user who held an address first loses its verification when a local account is given it', async () => {
    upstream.accounts.set('u-early', { sub: 'u-early', preferred_username: 'early', email: 'early@example.com', email_verified: true });
    const early = await signedInUser('Partner IdP', 'u-early');
    const verified = async () => (await server.sql('users').where({ id: early.id }).first('email_verified')).email_verified;
    expect(Boolean(await verified())).toBe(true);
    await server.user('early-local', 'early-local-password-1', { email: 'EARLY@example.com' });
    expect(Boolean(await verified())).toBe(false);
  });

  test('the start of upstream sign-ins is throttled per address', async () => {
    const origin = { ip: '203.0.113.9', requestId: 'r-starts' };
    const partner = server.ctx.upstreams.find('partner')!;
    // The limit (upstreamMaxStarts, 300 by default) of starts go; the next waits for the block to end.
    for (let i = 0; i < 300; i++) expect(await server.ctx.upstreams.signIns.starting(partner, origin)).toBe(0);
    expect(await server.ctx.upstreams.signIns.starting(partner, origin)).toBeGreaterThan(0);
    // Another network is not held up.
    expect(await server.ctx.upstreams.signIns.starting(partner, { ...origin, ip: '198.51.100.7' })).toBe(0);
  });

  test('identityBackends lists the upstreams with their state, and /metrics has them', async () => {
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain('latchkey_identity_backend_up{backend="partner"} 1');
    expect(metrics).toMatch(/latchkey_logins_total\{backend="strict",result="failure"\} [1-9]/);
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
    const answer = await graphqlPost(server, access_token, '{ identityBackends { id plugin order type up state } }');
    expect(answer.data?.identityBackends).toEqual([
      { id: 'local', plugin: 'database', order: 0, type: 'backend', up: true, state: 'up' },
      { id: 'partner', plugin: 'oidc', order: 0, type: 'upstream', up: true, state: 'up' },
      { id: 'strict', plugin: 'oidc', order: 1, type: 'upstream', up: true, state: 'up' },
      { id: 'entra', plugin: 'oidc', order: 2, type: 'upstream', up: true, state: 'up' },
    ]);
  });

  // Last: it uses up this suite's own address's starts.
  test('past the limit, idp= at the authorize endpoint answers 429 naming the upstream, without a round trip', async () => {
    const client = await server.client();
    const partner = server.ctx.upstreams.find('partner')!;
    const origin = { requestId: 'r-loopback' };
    for (const ip of ['127.0.0.1', '::ffff:127.0.0.1', '::1'])
      while ((await server.ctx.upstreams.signIns.starting(partner, { ...origin, ip })) === 0);
    const refused = await new Hops().get(authorizeUrl(client, { idp: 'partner' }));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.text()).toContain('Partner IdP');
  });
});
