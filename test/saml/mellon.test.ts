import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AUTHN_CONTEXT } from '../../src/saml/assertion.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { AccountBrowser } from '../helpers/account.ts';
import { serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { attributesOf, startMellon, WebWalker, type Mellon, type WebPage } from '../helpers/mellon.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { codeAt } from '../helpers/totp.ts';

const PASSWORD_CLASS = 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport';

const REGISTER = `mutation Register($xml: String!) {
  registerSamlServiceProvider(metadataXml: $xml) { entityId }
}`;

/**
 * docs/saml-applications.md against a service provider as operators run one: Apache httpd with mod_auth_mellon
 * (Debian's packages), registered from its own metadata, signing in and out through Latchkey.
 */
describe.each(databaseKinds)('Apache mod_auth_mellon through Latchkey on %s', (kind) => {
  let server: TestServer;
  let mellon: Mellon;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.user('grace', 'grace-password-1', {
      email: 'grace@example.com',
      displayName: 'Grace Hopper',
      groups: ['engineering', 'navy'],
    });
    await server.user('alan', 'alan-password-1', { email: 'alan@example.com', displayName: 'Alan Turing' });
    const idp = await fetch(`${server.url}/saml/v20/metadata`);
    expect(idp.status).toBe(200);
    mellon = await startMellon({ idpMetadataXml: await idp.text() });
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD);
    const registered = await graphqlPost(server, access_token, REGISTER, { xml: mellon.metadataXml });
    expect(registered.errors).toBeUndefined();
    expect(registered.data).toEqual({ registerSamlServiceProvider: { entityId: mellon.entityId } });
  });
  afterAll(async () => {
    await mellon?.stop();
    await server?.stop();
  });

  /** What mellon logged, for a failure's message: why it refused a response is only there. */
  const why = (page: WebPage) =>
    `${page.status} at ${page.url}\n${page.html.slice(0, 800)}\n--- Apache error log ---\n${mellon.errorLog()}`;

  /** From mellon's protected page to Latchkey's login page, through `/saml/v20/sso`. */
  async function toLoginPage(web: WebWalker): Promise<WebPage> {
    const login = await web.open(`${mellon.url}/secret/`);
    expect(web.visited.some((u) => u.startsWith(`${server.url}/saml/v20/sso?SAMLRequest=`))).toBe(true);
    expect(login.url.startsWith(server.url)).toBe(true);
    if (!/name="password"/.test(login.html)) throw new Error(`expected Latchkey's login page: ${why(login)}`);
    return login;
  }

  /** The auto-posting form's page, posted on to mellon's ACS: the protected page mellon then shows. */
  async function throughAcs(web: WebWalker, posting: WebPage): Promise<Record<string, string>> {
    const form = htmlForms(posting.html)[0];
    if (!form?.fields.SAMLResponse) throw new Error(`expected the form that posts the SAML Response: ${why(posting)}`);
    expect(new URL(form.action, posting.url).href).toBe(mellon.acsUrl);
    expect(form.method).toBe('post');
    const secret = await web.submit(posting);
    if (secret.status !== 200 || secret.url !== `${mellon.url}/secret/`) throw new Error(`mellon did not let the user in: ${why(secret)}`);
    return attributesOf(secret);
  }

  test('mellon serves its metadata, and a visitor of /secret/ is sent to Latchkey with a signed AuthnRequest', async () => {
    const metadata = await fetch(`${mellon.url}/mellon/metadata`);
    expect(metadata.status).toBe(200);
    expect(await metadata.text()).toContain(`entityID="${mellon.entityId}"`);
    const web = new WebWalker();
    await toLoginPage(web);
    const sso = new URL(web.visited.find((u) => u.startsWith(`${server.url}/saml/v20/sso?`))!);
    expect(sso.searchParams.get('SigAlg')).toBe('http://www.w3.org/2001/04/xmldsig-more#rsa-sha256');
    expect(sso.searchParams.get('Signature')).toBeTruthy();
    expect(sso.searchParams.get('RelayState')).toBeTruthy();
  });

  test("sign in at Latchkey's login page: mellon shows uid, mail, displayName and groups, by password", async () => {
    const web = new WebWalker();
    const login = await toLoginPage(web);
    const posting = await web.submit(login, { username: 'grace', password: 'grace-password-1' });
    // mellon's metadata gives an encryption key: the assertion travels encrypted (AES-256-GCM, the key
    // by RSA-OAEP), nothing of the user readable on the way; RelayState comes back as mellon sent it.
    const { SAMLResponse, RelayState } = htmlForms(posting.html)[0]?.fields ?? {};
    const response = Buffer.from(SAMLResponse ?? '', 'base64').toString('utf8');
    expect(response).toContain('EncryptedAssertion');
    expect(response).toContain('http://www.w3.org/2009/xmlenc11#aes256-gcm');
    expect(response).toMatch(/rsa-oaep/);
    expect(response).not.toContain('grace');
    const sso = new URL(web.visited.find((u) => u.startsWith(`${server.url}/saml/v20/sso?`))!);
    expect(RelayState).toBe(sso.searchParams.get('RelayState'));
    const attrs = await throughAcs(web, posting);
    expect(attrs.MELLON_uid).toBe('grace');
    expect(attrs.MELLON_mail).toBe('grace@example.com');
    expect(attrs.MELLON_displayName).toBe('Grace Hopper');
    expect(attrs.MELLON_groups?.split(';').sort()).toEqual(['engineering', 'navy']);
    expect(attrs.AUTHN_CONTEXT_CLASS_REF).toBe(PASSWORD_CLASS);
    // A persistent NameID: opaque, and the same at the next sign-in.
    expect(attrs.MELLON_NAME_ID).toBeTruthy();
    expect(attrs.MELLON_NAME_ID).not.toContain('grace');
    expect(attrs.REMOTE_USER).toBe(attrs.MELLON_NAME_ID);
    expect(mellon.errorLog()).not.toMatch(/\[auth_mellon:error\]/);
  });

  test("single logout at /mellon/logout ends Latchkey's session: the next visit asks to sign in again", async () => {
    const web = new WebWalker();
    await throughAcs(web, await web.submit(await toLoginPage(web), { username: 'grace', password: 'grace-password-1' }));
    const out = await web.open(`${mellon.url}/mellon/logout?ReturnTo=${encodeURIComponent(`${mellon.url}/signed-out.html`)}`);
    expect(web.visited.some((u) => u.startsWith(`${server.url}/saml/v20/slo?SAMLRequest=`))).toBe(true);
    // Latchkey answers with a LogoutResponse by the HTTP-Redirect binding, which mellon accepts.
    expect(web.visited.some((u) => u.startsWith(`${mellon.url}/mellon/logout?SAMLResponse=`))).toBe(true);
    if (out.url !== `${mellon.url}/signed-out.html`) throw new Error(`the logout did not come back to ReturnTo: ${why(out)}`);
    expect(out.html).toContain('Signed out');

    // Neither mellon nor Latchkey remembers the user: the login page again, not the protected page.
    await toLoginPage(web);
  });

  test('the SSO session serves a new mellon session without the login page; the NameID is stable', async () => {
    const web = new WebWalker();
    const first = await throughAcs(web, await web.submit(await toLoginPage(web), { username: 'alan', password: 'alan-password-1' }));
    // mellon's session cookie gone (a new application session), Latchkey's SSO cookie kept.
    web.forget('mellon-cookie');
    const posting = await web.open(`${mellon.url}/secret/`);
    expect(posting.url.startsWith(server.url)).toBe(true);
    const again = await throughAcs(web, posting);
    expect(again.MELLON_uid).toBe('alan');
    expect(again.MELLON_NAME_ID).toBe(first.MELLON_NAME_ID);
  });

  test('a mellon Latchkey does not know gets the HTML error page (400), and no redirect back to it', async () => {
    const stranger = await startMellon({ idpMetadataXml: await (await fetch(`${server.url}/saml/v20/metadata`)).text() });
    try {
      const web = new WebWalker();
      const page = await web.open(`${stranger.url}/secret/`);
      expect(page.url.startsWith(`${server.url}/saml/v20/sso?`)).toBe(true);
      expect(page.status).toBe(400);
      expect(page.html).toMatch(/<html/i);
      expect(page.html).not.toMatch(/name="password"|SAMLResponse/);
    } finally {
      await stranger.stop();
    }
  });

  test('a user with TOTP: the assertion mellon receives carries the multi-factor class', async () => {
    await server.user('ada', 'ada-password-1', { email: 'ada@example.com', displayName: 'Ada Lovelace' });
    const account = new AccountBrowser(server);
    expect((await account.signInAtAccount('ada', 'ada-password-1')).status).toBe(200);
    const { secret } = await account.enrolTotp();

    const web = new WebWalker();
    const second = await web.submit(await toLoginPage(web), { username: 'ada', password: 'ada-password-1' });
    if (!/name="code"/.test(second.html)) throw new Error(`expected the second step: ${why(second)}`);
    // The next step's code: the enrolment took this step's (one step of drift is accepted).
    const attrs = await throughAcs(web, await web.submit(second, { code: codeAt(secret, serverNow() + 30_000) }));
    expect(attrs.MELLON_uid).toBe('ada');
    expect(attrs.AUTHN_CONTEXT_CLASS_REF).toBe(AUTHN_CONTEXT.multiFactor);
    expect(attrs.AUTHN_CONTEXT_CLASS_REF).not.toBe(PASSWORD_CLASS);
  });
});
