import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { DOMParser } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { SamlBrowser, type Hop } from '../helpers/saml-browser.ts';
import { startSamlSp, type AcsAnswer, type SpOptions, type TestSp } from '../helpers/saml-sp.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { postForm } from '../helpers/http.ts';
import { AccountBrowser } from '../helpers/account.ts';
import { serverNow } from '../helpers/clock.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { codeAt } from '../helpers/totp.ts';
import { samlKeys } from '../../src/saml/idp-keys.ts';

const PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
const PASSWORD_CLASS = 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport';
const DSIG = 'http://www.w3.org/2000/09/xmldsig#';

const REGISTER = `mutation Register($xml: String, $input: SamlServiceProviderInput) {
  registerSamlServiceProvider(metadataXml: $xml, input: $input) {
    entityId name assertionConsumerServiceUrls singleLogoutServiceUrl nameIdFormat attributes
    signAssertions signResponses encryptAssertions wantAuthnRequestsSigned allowIdpInitiated signingCertificate encryptionCertificate
  }
}`;

/** The base64 certificate of the IdP metadata's first KeyDescriptor. */
const certificateOf = (metadata: string) => /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!;
const pem = (b64: string) => `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;

/** The Response a form-post page carries, decoded. */
const responseXmlOf = (page: Hop) => Buffer.from(htmlForms(page.html)[0]!.fields.SAMLResponse!, 'base64').toString('utf8');

describe.each(databaseKinds)('the SAML 2.0 identity provider against node-saml on %s', (kind) => {
  let server: TestServer;
  let token: string;
  let idpCert: string;
  let metadata: string;
  const sps: TestSp[] = [];

  /** A node-saml SP, registered from its own metadata (with `input` over it). */
  async function sp(options: Omit<SpOptions, 'idpUrl' | 'idpCert'> = {}, input: Record<string, unknown> = {}): Promise<TestSp> {
    const made = await startSamlSp({ idpUrl: server.url, idpCert, ...options });
    sps.push(made);
    // node-saml's metadata names an HTTP-POST SingleLogoutService; its /slo takes the Redirect binding too.
    const answer = await graphqlPost(server, token, REGISTER, {
      xml: made.metadataXml,
      input: { singleLogoutServiceUrl: made.sloUrl, ...input },
    });
    expect(answer.errors).toBeUndefined();
    return made;
  }

  /** The SP's login, Latchkey's login page, the password: the page that posts the Response. */
  async function signOn(
    browser: SamlBrowser,
    target: TestSp,
    o: { relay?: string; post?: boolean; user?: string; password?: string } = {},
  ): Promise<Hop> {
    const relay = encodeURIComponent(o.relay ?? '');
    let page: Hop;
    if (o.post) {
      const spPage = await browser.get(`${target.url}/login-post?relay=${relay}`);
      page = await browser.follow(await browser.submit(spPage));
    } else {
      page = await browser.follow(await browser.get(`${target.url}/login?relay=${relay}`));
    }
    if (/name="password"/.test(page.html))
      page = await browser.submit(page, { username: o.user ?? 'grace', password: o.password ?? 'grace-password-1' });
    return page;
  }

  /** The form-post page posted on to the SP's ACS: what node-saml made of it. */
  async function atAcs(browser: SamlBrowser, page: Hop): Promise<AcsAnswer> {
    if (page.status !== 200)
      throw new Error(
        `expected the form-post page, got ${page.status}: ${/id="error_description">([^<]*)/.exec(page.html)?.[1] ?? page.html.slice(0, 600)}`,
      );
    const forms = htmlForms(page.html);
    expect(forms[0]?.fields.SAMLResponse).toBeDefined();
    const answer = await browser.submit(page);
    return JSON.parse(answer.html) as AcsAnswer;
  }

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('grace', 'grace-password-1', {
      email: 'grace@example.com',
      displayName: 'Grace Hopper',
      groups: ['engineering', 'navy'],
    });
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    metadata = await (await fetch(`${server.url}/saml/v20/metadata`)).text();
    idpCert = pem(certificateOf(metadata));
  });
  afterAll(async () => {
    for (const s of sps) await s.stop();
    await server?.stop();
  });

  test('the metadata names the endpoints, the bindings, the NameID formats and a stable signing certificate', async () => {
    expect(metadata).toContain(`entityID="${server.url}/saml/v20/metadata"`);
    expect(metadata).toContain(
      `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${server.url}/saml/v20/sso"/>`,
    );
    expect(metadata).toContain(
      `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${server.url}/saml/v20/sso"/>`,
    );
    expect(metadata).toContain(
      `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${server.url}/saml/v20/slo"/>`,
    );
    for (const f of [
      PERSISTENT,
      'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
    ]) {
      expect(metadata).toContain(`<md:NameIDFormat>${f}</md:NameIDFormat>`);
    }
    expect(new DOMParser().parseFromString(metadata, 'text/xml').documentElement.localName).toBe('EntityDescriptor');
    // The same certificate on every fetch (and every process): derived from the key.
    expect(certificateOf(await (await fetch(`${server.url}/saml/v20/metadata`)).text())).toBe(certificateOf(metadata));
    const idp = await graphqlPost(
      server,
      token,
      '{ samlIdentityProvider { entityId singleSignOnUrl singleLogoutUrl signingCertificate } }',
    );
    expect(idp.data).toEqual({
      samlIdentityProvider: {
        entityId: `${server.url}/saml/v20/metadata`,
        singleSignOnUrl: `${server.url}/saml/v20/sso`,
        singleLogoutUrl: `${server.url}/saml/v20/slo`,
        signingCertificate: idpCert.trim(),
      },
    });
  });

  test('an SP registered from its metadata is listed, updated, audited and deleted', async () => {
    const made = await startSamlSp({ idpUrl: server.url, idpCert, signRequests: true, encryption: true });
    sps.push(made);
    const registered = await graphqlPost(server, token, REGISTER, {
      xml: made.metadataXml,
      input: { name: 'Wiki', singleLogoutServiceUrl: made.sloUrl },
    });
    expect(registered.errors).toBeUndefined();
    expect(registered.data!.registerSamlServiceProvider).toMatchObject({
      entityId: made.entityId,
      name: 'Wiki',
      assertionConsumerServiceUrls: [made.acsUrl],
      singleLogoutServiceUrl: made.sloUrl,
      nameIdFormat: 'PERSISTENT',
      attributes: ['uid', 'mail', 'displayName', 'groups'],
      signAssertions: true,
      signResponses: false,
      encryptAssertions: true,
      wantAuthnRequestsSigned: true,
      allowIdpInitiated: false,
    });
    const again = await graphqlPost(server, token, REGISTER, { xml: made.metadataXml });
    expect(again.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    const updated = await graphqlPost(
      server,
      token,
      `mutation { updateSamlServiceProvider(entityId: "${made.entityId}", input: { allowIdpInitiated: true, attributes: ["uid"], nameIdFormat: EMAIL_ADDRESS }) { allowIdpInitiated attributes nameIdFormat } }`,
    );
    expect(updated.data).toEqual({
      updateSamlServiceProvider: { allowIdpInitiated: true, attributes: ['uid'], nameIdFormat: 'EMAIL_ADDRESS' },
    });
    const listed = await graphqlPost(server, token, '{ samlServiceProviders { entityId } }');
    expect((listed.data!.samlServiceProviders as Array<{ entityId: string }>).map((s) => s.entityId)).toContain(made.entityId);

    const bad = await graphqlPost(server, token, REGISTER, {
      input: { entityId: 'https://x.example/sp', assertionConsumerServiceUrls: ['javascript:alert(1)'] },
    });
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const dtd = await graphqlPost(server, token, REGISTER, { xml: `<!DOCTYPE x [<!ENTITY e "boom">]>${made.metadataXml}` });
    expect(dtd.errors?.[0]?.message).toMatch(/DTD/);

    const deleted = await graphqlPost(server, token, `mutation { deleteSamlServiceProvider(entityId: "${made.entityId}") }`);
    expect(deleted.data).toEqual({ deleteSamlServiceProvider: true });
    const audit = await graphqlPost(server, token, '{ auditEvents(kind: "admin.change", first: 50) { edges { node { details } } } }');
    const actions = JSON.stringify(audit.data);
    for (const a of ['saml_sp.register', 'saml_sp.update', 'saml_sp.delete']) expect(actions).toContain(a);
  });

  test('SP-initiated sign-on by HTTP-Redirect with a signed request: node-saml accepts the signed assertion', async () => {
    const target = await sp({ signRequests: true });
    const browser = new SamlBrowser();
    const visited: string[] = [];
    const login = await browser.follow(await browser.get(`${target.url}/login?relay=${encodeURIComponent('/wiki/page?x=1&y=2')}`), visited);
    expect(visited[0]).toMatch(new RegExp(`^${server.url}/saml/v20/sso\\?SAMLRequest=.*&SigAlg=.*&Signature=`));
    expect(login.status).toBe(200);
    expect(login.html).toContain('name="password"');
    const posting = await browser.submit(login, { username: 'grace', password: 'grace-password-1' });
    const answer = await atAcs(browser, posting);
    expect(answer.error).toBeUndefined();
    expect(answer.relayState).toBe('/wiki/page?x=1&y=2');
    const profile = answer.profile!;
    expect(profile.issuer).toBe(`${server.url}/saml/v20/metadata`);
    expect(profile.nameIDFormat).toBe(PERSISTENT);
    expect(profile.nameID).toMatch(/^[\w-]{43}$/);
    expect(profile.uid).toBe('grace');
    expect(profile.mail).toBe('grace@example.com');
    expect(profile.displayName).toBe('Grace Hopper');
    expect(profile.groups).toEqual(['engineering', 'navy']);
    expect(profile.sessionIndex).toBeTruthy();
    const xml = responseXmlOf(posting);
    expect(xml).toContain(`<saml:AuthnContextClassRef>${PASSWORD_CLASS}</saml:AuthnContextClassRef>`);
    expect(xml).toMatch(/InResponseTo="[^"]+"/);
    expect(xml).toContain(`<saml:Audience>${target.entityId}</saml:Audience>`);
    expect(xml).toContain(`Recipient="${target.acsUrl}"`);
  });

  test('SP-initiated sign-on by HTTP-POST with an enveloped signature; the same SSO session asks for no password', async () => {
    const target = await sp({ signRequests: true, binding: 'HTTP-POST' });
    const browser = new SamlBrowser();
    const answer = await atAcs(browser, await signOn(browser, target, { post: true, relay: 'post-relay' }));
    expect(answer.error).toBeUndefined();
    expect(answer.relayState).toBe('post-relay');

    // Another SP in the same browser: straight to the form-post page, and another pairwise NameID.
    const other = await sp();
    const page = await browser.follow(await browser.get(`${other.url}/login`));
    expect(page.html).not.toContain('name="password"');
    const second = await atAcs(browser, page);
    expect(second.profile!.nameID).toMatch(/^[\w-]{43}$/);
    expect(second.profile!.nameID).not.toBe(answer.profile!.nameID);
    // Stable for the pair: the same user at the same SP gets the same NameID again.
    const again = await atAcs(browser, await signOn(browser, target, { post: true }));
    expect(again.profile!.nameID).toBe(answer.profile!.nameID);
  });

  test('HTTP-POST from another site, without the Lax cookie: a 303 to a GET here, which has the session and asks for no password', async () => {
    const target = await sp({ signRequests: true, binding: 'HTTP-POST' });
    const browser = new SamlBrowser();
    expect((await atAcs(browser, await signOn(browser, target))).ok).toBe(true);

    // The SP's auto-submitted form, as a browser sends it cross-site: no SameSite=Lax cookie.
    const spPage = await browser.get(`${target.url}/login-post?relay=cross`);
    const form = htmlForms(spPage.html)[0]!;
    const crossSite = await postForm(new URL(form.action, spPage.url).href, form.fields);
    expect(crossSite.status).toBe(303);
    const location = new URL(crossSite.headers.get('location')!, server.url);
    expect(location.pathname).toBe('/saml/v20/sso');
    expect([...location.searchParams.keys()]).toEqual(['saml_request']);

    // The top-level GET that follows carries the session: straight to the form-post page.
    const page = await browser.get(location.href);
    expect(page.html).not.toContain('name="password"');
    const answer = await atAcs(browser, page);
    expect(answer.error).toBeUndefined();
    expect(answer.relayState).toBe('cross');
    expect(answer.profile!.uid).toBe('grace');
  });

  test('ForceAuthn asks a signed-in browser for its password again, then goes straight on to the SP', async () => {
    const target = await sp({ signRequests: true });
    const browser = new SamlBrowser();
    expect((await atAcs(browser, await signOn(browser, target))).ok).toBe(true);
    (target.saml.options as { forceAuthn: boolean }).forceAuthn = true;
    const login = await browser.follow(await browser.get(`${target.url}/login`));
    expect(login.html).toContain('name="password"');
    const page = await browser.submit(login, { username: 'grace', password: 'grace-password-1' });
    const answer = await atAcs(browser, page);
    expect(answer.profile!.uid).toBe('grace');
  });

  test('an SP with an encryption certificate gets an EncryptedAssertion (AES-256-GCM, RSA-OAEP) that node-saml decrypts', async () => {
    const target = await sp({ encryption: true, wantAuthnResponseSigned: true }, { signResponses: true });
    const browser = new SamlBrowser();
    const page = await signOn(browser, target);
    const xml = responseXmlOf(page);
    expect(xml).toContain('<saml:EncryptedAssertion');
    expect(xml).toContain('http://www.w3.org/2009/xmlenc11#aes256-gcm');
    expect(xml).toContain('http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p');
    expect(xml).not.toContain('grace');
    const answer = await atAcs(browser, page);
    expect(answer.error).toBeUndefined();
    expect(answer.profile!.uid).toBe('grace');
  });

  test('IdP-initiated sign-on for an SP that allows it, and a 400 page for one that does not', async () => {
    const allowed = await sp({}, { allowIdpInitiated: true, nameIdFormat: 'EMAIL_ADDRESS', attributes: ['uid'] });
    const browser = new SamlBrowser();
    let page = await browser.get(`${server.url}/saml/v20/sso?sp=${encodeURIComponent(allowed.entityId)}&RelayState=dashboard`);
    page = await browser.submit(page, { username: 'grace', password: 'grace-password-1' });
    expect(responseXmlOf(page)).not.toContain('InResponseTo');
    const answer = await atAcs(browser, page);
    expect(answer.error).toBeUndefined();
    expect(answer.relayState).toBe('dashboard');
    expect(answer.profile!.nameID).toBe('grace@example.com');
    expect(answer.profile!.mail).toBeUndefined();

    const refused = await sp();
    const denied = await browser.get(`${server.url}/saml/v20/sso?sp=${encodeURIComponent(refused.entityId)}`);
    expect(denied.status).toBe(400);
    expect(denied.location).toBeNull();
    expect(denied.html).toContain('does not accept IdP-initiated sign-on');
  });

  test('single logout: the SP that asks gets a signed LogoutResponse, the session’s other SP is told, the session ends', async () => {
    const first = await sp({ signRequests: true });
    const second = await sp({ signRequests: true });
    const browser = new SamlBrowser();
    expect((await atAcs(browser, await signOn(browser, first))).ok).toBe(true);
    expect((await atAcs(browser, await signOn(browser, second))).ok).toBe(true);

    // An OIDC client of the same SSO session: its tokens end with the session (session-ends.ts).
    const client = await server.client({ scopes: ['openid', 'profile'] });
    const authorized = await browser.get(
      `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', scope: 'openid', state: 's' })}`,
    );
    const code = new URL(authorized.location!).searchParams.get('code')!;
    const tokens = (await (await exchangeCode(server, client, code)).json()) as { access_token: string };
    const me = () => fetch(`${server.url}/api/oauth/v20/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect((await me()).status).toBe(200);

    const visited: string[] = [];
    const end = await browser.follow(await browser.get(`${first.url}/logout?relay=bye`), visited);
    // first → Latchkey (LogoutRequest) → second (LogoutRequest) → Latchkey (LogoutResponse) → first (LogoutResponse).
    expect(visited.map((u) => new URL(u).origin + new URL(u).pathname)).toEqual([
      `${server.url}/saml/v20/slo`,
      second.sloUrl,
      `${server.url}/saml/v20/slo`,
      first.sloUrl,
    ]);
    expect(new URL(visited[1]!).searchParams.get('Signature')).toBeTruthy();
    expect(JSON.parse(end.html)).toEqual({ ok: true, loggedOut: true, relayState: 'bye' });

    // The SSO session is gone: the next sign-on asks for the password again, and the OIDC token is revoked.
    const page = await browser.follow(await browser.get(`${first.url}/login`));
    expect(page.html).toContain('name="password"');
    expect((await me()).status).toBe(401);
    const audit = await graphqlPost(server, token, '{ auditEvents(kind: "saml.logout", first: 5) { edges { node { details } } } }');
    expect(JSON.stringify(audit.data)).toContain(first.entityId);
  });

  test('a LogoutRequest naming a NameID this session did not give that SP ends nothing', async () => {
    const target = await sp({ signRequests: true });
    const browser = new SamlBrowser();
    const signedIn = await atAcs(browser, await signOn(browser, target));
    const forged = { ...signedIn.profile!, nameID: 'someone-else' };
    const url = await target.saml.getLogoutUrlAsync(forged as never, 'r', {});
    const end = await browser.follow(await browser.get(url));
    // The SP is told the logout failed (node-saml refuses a non-Success status) …
    expect(JSON.parse(end.html)).toMatchObject({ ok: false });
    // … and the SSO session is still there: no password asked.
    const page = await browser.follow(await browser.get(`${target.url}/login`));
    expect(page.html).not.toContain('name="password"');
  });

  test('an unsigned LogoutRequest (an SP without a certificate) ends a session only for its pairwise NameID', async () => {
    // An email address is easy to guess: a link to the SLO endpoint naming it must not sign anyone out.
    const byEmail = await sp(
      { identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' },
      { nameIdFormat: 'EMAIL_ADDRESS' },
    );
    const browser = new SamlBrowser();
    const signedIn = await atAcs(browser, await signOn(browser, byEmail));
    expect(signedIn.profile!.nameID).toBe('grace@example.com');
    const forged = await browser.follow(await browser.get(await byEmail.saml.getLogoutUrlAsync(signedIn.profile as never, 'r', {})));
    expect(JSON.parse(forged.html)).toMatchObject({ ok: false });
    expect((await browser.follow(await browser.get(`${byEmail.url}/login`))).html).not.toContain('name="password"');

    // The pairwise persistent NameID is known only to the SP it was given to: its unsigned request is taken.
    const byPairwise = await sp();
    const other = new SamlBrowser();
    const pairwise = await atAcs(other, await signOn(other, byPairwise));
    expect(pairwise.profile!.nameIDFormat).toBe(PERSISTENT);
    const ended = await other.follow(await other.get(await byPairwise.saml.getLogoutUrlAsync(pairwise.profile as never, 'r', {})));
    expect(JSON.parse(ended.html)).toMatchObject({ ok: true, loggedOut: true });
    expect((await other.follow(await other.get(`${byPairwise.url}/login`))).html).toContain('name="password"');
  });

  test('a sign-in with a second factor carries the multi-factor AuthnContextClassRef', async () => {
    await server.user('ada', 'ada-password-1', { email: 'ada@example.com' });
    const account = new AccountBrowser(server);
    expect((await account.signInAtAccount('ada', 'ada-password-1')).status).toBe(200);
    const { secret } = await account.enrolTotp();
    const target = await sp();
    const browser = new SamlBrowser();
    const second = await signOn(browser, target, { user: 'ada', password: 'ada-password-1' });
    expect(second.html).toContain('name="code"');
    // The next step's code: the enrolment took this step's (one step of drift is accepted).
    const page = await browser.submit(second, { code: codeAt(secret, serverNow() + 30_000) });
    expect(responseXmlOf(page)).toContain('<saml:AuthnContextClassRef>https://refeds.org/profile/mfa</saml:AuthnContextClassRef>');
    const answer = await atAcs(browser, page);
    expect(answer.profile!.uid).toBe('ada');
  });

  test('a passive request of a browser without a session gets a NoPassive status, not a login page', async () => {
    const target = await startSamlSp({ idpUrl: server.url, idpCert });
    sps.push(target);
    await graphqlPost(server, token, REGISTER, { xml: target.metadataXml });
    (target.saml.options as { passive: boolean }).passive = true;
    const browser = new SamlBrowser();
    const page = await browser.follow(await browser.get(`${target.url}/login`));
    expect(responseXmlOf(page)).toContain('urn:oasis:names:tc:SAML:2.0:status:NoPassive');
    // node-saml reads NoPassive as "no user", not as an error: no profile.
    const answer = await atAcs(browser, page);
    expect(answer.profile ?? null).toBeNull();
  });

  test('every signature Latchkey emits covers the element that carries it, and only that element (no wrapping)', async () => {
    const target = await sp({ wantAuthnResponseSigned: true }, { signResponses: true });
    const browser = new SamlBrowser();
    const xml = responseXmlOf(await signOn(browser, target));
    const doc = new DOMParser().parseFromString(xml, 'text/xml');
    const signatures = Array.from(doc.getElementsByTagNameNS(DSIG, 'Signature'));
    expect(signatures.map((s) => (s.parentNode as Element).localName).sort()).toEqual(['Assertion', 'Response']);
    expect(doc.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Assertion')).toHaveLength(1);
    for (const signature of signatures) {
      const parent = signature.parentNode as Element;
      const check = new SignedXml({ publicCert: idpCert, getCertFromKeyInfo: () => null });
      check.loadSignature(signature);
      expect(check.checkSignature(xml)).toBe(true);
      const refs = check.getReferences();
      expect(refs.map((r) => r.uri)).toEqual([`#${parent.getAttribute('ID')}`]);
      expect(check.getSignedReferences()[0]).toContain(`ID="${parent.getAttribute('ID')}"`);
    }
  });

  test('the certificate is derived from the key: another process makes the same one; a rotation publishes the next key first', async () => {
    // What a second process (or a restart) would make from the same stored key.
    const elsewhere = await samlKeys(server.ctx.keys, server.url).certificates();
    expect(elsewhere[0]!.replace(/-----[A-Z ]+-----|\s/g, '')).toBe(certificateOf(metadata));
    await server.ctx.keys.rotate(['RS256']);
    const after = await (await fetch(`${server.url}/saml/v20/metadata`)).text();
    const certs = [...after.matchAll(/<ds:X509Certificate>([^<]+)</g)].map((m) => m[1]);
    expect(certs).toHaveLength(2);
    // The current key still signs (the new one waits for keys.publishDelay), and is listed first.
    expect(certs[0]).toBe(certificateOf(metadata));
  });
});
