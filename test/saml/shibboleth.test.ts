import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { SamlBrowser, type Hop } from '../helpers/saml-browser.ts';
import { redirectBindingUrl, signedPost } from '../helpers/saml-requests.ts';
import { keyAndCertificate } from '../helpers/saml-sp.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

const ENTITY = 'https://wiki.example.org/shibboleth';
const SSO = 'https://wiki.example.org/Shibboleth.sso';
const ACS_INDEX_1 = `${SSO}/SAML2/POST`;
const ACS_DEFAULT = `${SSO}/SAML2/POST-default`;
const body = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s+/g, '');

/**
 * What Shibboleth SP 3's `/Shibboleth.sso/Metadata` hands out when it signs its requests: no
 * NameIDFormat (optional, SAML Metadata 2.4.2), xs:boolean written as `1`, indexed endpoints of several
 * bindings, one KeyDescriptor without `use`.
 */
const shibbolethMetadata = (
  cert: string,
) => `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${ENTITY}">
  <md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol urn:oasis:names:tc:SAML:1.1:protocol" AuthnRequestsSigned="1" WantAssertionsSigned="1">
    <md:Extensions>
      <init:RequestInitiator xmlns:init="urn:oasis:names:tc:SAML:profiles:SSO:request-init" Binding="urn:oasis:names:tc:SAML:profiles:SSO:request-init" Location="${SSO}/Login"/>
    </md:Extensions>
    <md:KeyDescriptor>
      <ds:KeyInfo><ds:KeyName>wiki.example.org</ds:KeyName><ds:X509Data><ds:X509Certificate>${body(cert)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:ArtifactResolutionService Binding="urn:oasis:names:tc:SAML:2.0:bindings:SOAP" Location="${SSO}/Artifact/SOAP" index="1"/>
    <md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:SOAP" Location="${SSO}/SLO/SOAP"/>
    <md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${SSO}/SLO/Redirect"/>
    <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${ACS_INDEX_1}" index="1"/>
    <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST-SimpleSign" Location="${SSO}/SAML2/POST-SimpleSign" index="2"/>
    <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact" Location="${SSO}/SAML2/Artifact" index="3"/>
    <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:PAOS" Location="${SSO}/SAML2/ECP" index="4"/>
    <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${ACS_DEFAULT}" index="6" isDefault="1"/>
  </md:SPSSODescriptor>
</md:EntityDescriptor>`;

/** A Shibboleth-style AuthnRequest; `attrs` are written into the root as given (its booleans as `1`). */
const authnRequest = (server: TestServer, attrs: string, inner = '<samlp:NameIDPolicy AllowCreate="1"/>') =>
  `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ${attrs} Destination="${server.url}/saml/v20/sso" ID="_${randomBytes(16).toString('hex')}" IssueInstant="${new Date().toISOString()}" ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Version="2.0"><saml:Issuer xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">${ENTITY}</saml:Issuer>${inner}</samlp:AuthnRequest>`;

/** The Response the form-post page carries, decoded, and where the page posts it. */
function posted(page: Hop): { action: string; xml: string } {
  const form = htmlForms(page.html)[0];
  if (page.status !== 200 || !form?.fields.SAMLResponse)
    throw new Error(`expected the form-post page, got ${page.status}: ${page.html.slice(0, 400)}`);
  return { action: form.action, xml: Buffer.from(form.fields.SAMLResponse, 'base64').toString('utf8') };
}

const asksPassword = (page: Hop) => page.status === 200 && /name="password"/.test(page.html);

/** docs/decisions.md "XML booleans (SAML)" and "SP metadata and AuthnRequests", with what Shibboleth SP 3 sends. */
describe('a Shibboleth SP against the SAML IdP', () => {
  let server: TestServer;
  let sp: { key: string; cert: string };
  const signed = (xml: string) => redirectBindingUrl(`${server.url}/saml/v20/sso`, xml, sp.key);

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('grace', 'grace-password-1', { email: 'grace@example.com', displayName: 'Grace Hopper' });
    sp = await keyAndCertificate('wiki.example.org');
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('its own metadata registers: persistent NameIDs by default, signed requests required, the isDefault ACS first', async () => {
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD);
    const answer = await graphqlPost(
      server,
      access_token,
      `mutation R($xml: String) { registerSamlServiceProvider(metadataXml: $xml) { entityId nameIdFormat wantAuthnRequestsSigned signAssertions assertionConsumerServiceUrls singleLogoutServiceUrl } }`,
      { xml: shibbolethMetadata(sp.cert) },
    );
    expect(answer.errors).toBeUndefined();
    expect(answer.data!.registerSamlServiceProvider).toEqual({
      entityId: ENTITY,
      nameIdFormat: 'PERSISTENT',
      wantAuthnRequestsSigned: true,
      signAssertions: true,
      assertionConsumerServiceUrls: [ACS_DEFAULT, ACS_INDEX_1],
      singleLogoutServiceUrl: `${SSO}/SLO/Redirect`,
    });
  });

  test('AuthnRequestsSigned="1": an unsigned request is refused', async () => {
    const res = await fetch(
      redirectBindingUrl(`${server.url}/saml/v20/sso`, authnRequest(server, `AssertionConsumerServiceURL="${ACS_INDEX_1}"`), null),
      { redirect: 'manual' },
    );
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/not signed/);
  });

  test('IsPassive="1" without a session: a NoPassive status at the ACS, never a page', async () => {
    const browser = new SamlBrowser();
    const page = await browser.follow(
      await browser.get(signed(authnRequest(server, `IsPassive="1" AssertionConsumerServiceURL="${ACS_INDEX_1}"`))),
    );
    const { action, xml } = posted(page);
    expect(action).toBe(ACS_INDEX_1);
    expect(xml).toContain('urn:oasis:names:tc:SAML:2.0:status:NoPassive');
    expect(xml).not.toContain('<saml:Assertion');
  });

  test('no ACS URL: the default ACS; an index: its URL; ForceAuthn="1" asks for the password again despite the session', async () => {
    const browser = new SamlBrowser();
    // Neither URL nor index (Shibboleth with an index-less request): the metadata's isDefault ACS.
    let page = await browser.follow(await browser.get(signed(authnRequest(server, ''))));
    expect(asksPassword(page)).toBe(true);
    page = await browser.submit(page, { username: 'grace', password: 'grace-password-1' });
    let answer = posted(page);
    expect(answer.action).toBe(ACS_DEFAULT);
    expect(answer.xml).toContain('urn:oasis:names:tc:SAML:2.0:status:Success');
    expect(answer.xml).toContain('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');

    // The session is live: an ordinary request is answered at once, at the index it names.
    page = await browser.follow(await browser.get(signed(authnRequest(server, 'AssertionConsumerServiceIndex="1"'))));
    expect(posted(page).action).toBe(ACS_INDEX_1);

    // SAML Core 3.4.1: ForceAuthn="1" must authenticate the presenter again.
    page = await browser.follow(
      await browser.get(signed(authnRequest(server, `ForceAuthn="1" AssertionConsumerServiceURL="${ACS_INDEX_1}"`))),
    );
    expect(asksPassword(page)).toBe(true);
    page = await browser.submit(page, { username: 'grace', password: 'grace-password-1' });
    answer = posted(page);
    expect(answer.action).toBe(ACS_INDEX_1);
    expect(answer.xml).toContain('urn:oasis:names:tc:SAML:2.0:status:Success');

    // Both: re-authentication that may show no page cannot be done, so NoPassive, never an assertion.
    page = await browser.follow(
      await browser.get(signed(authnRequest(server, `ForceAuthn="1" IsPassive="1" AssertionConsumerServiceURL="${ACS_INDEX_1}"`))),
    );
    answer = posted(page);
    expect(answer.xml).toContain('urn:oasis:names:tc:SAML:2.0:status:NoPassive');
    expect(answer.xml).not.toContain('<saml:Assertion');
  });

  test('the signed POST binding reads the booleans the same way', async () => {
    const browser = new SamlBrowser();
    const xml = signedPost(authnRequest(server, `IsPassive="1" AssertionConsumerServiceURL="${ACS_INDEX_1}"`), sp.key);
    const accepted = await browser.post(`${server.url}/saml/v20/sso`, { SAMLRequest: Buffer.from(xml).toString('base64') });
    const page = await browser.follow(accepted);
    expect(posted(page).xml).toContain('urn:oasis:names:tc:SAML:2.0:status:NoPassive');
  });

  test('a NameIDPolicy format other than the registered one gets InvalidNameIDPolicy, never the email', async () => {
    const browser = new SamlBrowser();
    const policy = '<samlp:NameIDPolicy AllowCreate="1" Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"/>';
    const page = await browser.follow(
      await browser.get(signed(authnRequest(server, `AssertionConsumerServiceURL="${ACS_INDEX_1}"`, policy))),
    );
    const { action, xml } = posted(page);
    expect(action).toBe(ACS_INDEX_1);
    expect(xml).toContain('urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy');
    expect(xml).not.toContain('grace@example.com');
    expect(xml).not.toContain('<saml:Assertion');
  });

  test('an unknown index, an index beside a URL, and a boolean spelt "yes" are refused with a page', async () => {
    for (const [attrs, why] of [
      ['AssertionConsumerServiceIndex="9"', /not an index/],
      [`AssertionConsumerServiceIndex="1" AssertionConsumerServiceURL="${ACS_INDEX_1}"`, /both/],
      [`ForceAuthn="yes" AssertionConsumerServiceURL="${ACS_INDEX_1}"`, /not an xs:boolean/],
    ] as const) {
      const res = await fetch(signed(authnRequest(server, attrs)), { redirect: 'manual' });
      const html = await res.text();
      expect(res.status).toBe(400);
      expect(html).toMatch(why);
      expect(html).not.toContain('<form');
    }
  });
});
