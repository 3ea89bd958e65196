import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { keyAndCertificate } from '../helpers/saml-sp.ts';
import { redirectBindingUrl, RSA_SHA256, signedPost } from '../helpers/saml-requests.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { postForm } from '../helpers/http.ts';

const ENTITY = 'https://crm.example.com/saml';
const ACS = 'https://crm.example.com/saml/acs';
const SLO = 'https://crm.example.com/saml/slo';

/**
 * docs/saml-applications.md "Errors": every bad AuthnRequest gets a 400 page in the browser, is sent nowhere (no
 * redirect, no form to any URL it named), and costs one log line. Requests are written by hand
 * here, as an attacker would, and signed with the SP's key where the case needs a valid signature.
 */
describe('SAML requests Latchkey refuses', () => {
  let server: TestServer;
  let sp: { key: string; cert: string };
  let stranger: { key: string; cert: string };

  const now = () => new Date().toISOString();
  const newId = () => `_${randomBytes(16).toString('hex')}`;
  const authnRequest = (o: { id?: string; issuer?: string; acs?: string; instant?: string; issuerText?: string } = {}) =>
    `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${o.id ?? newId()}" Version="2.0" IssueInstant="${o.instant ?? now()}" Destination="${server.url}/saml/v20/sso" AssertionConsumerServiceURL="${o.acs ?? ACS}" ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"><saml:Issuer>${o.issuerText ?? o.issuer ?? ENTITY}</saml:Issuer></samlp:AuthnRequest>`;

  const redirectUrl = (xml: string | Buffer, key: string | null, sigAlg = RSA_SHA256, hash = 'RSA-SHA256') =>
    redirectBindingUrl(`${server.url}/saml/v20/sso`, xml, key, { sigAlg, hash });

  const refusals = () => server.logs.filter((l) => l.includes('SAML message refused')).length;

  /** The request is refused: a 400 page saying `why`, no redirect, no form, one log line. */
  async function expectRefused(send: () => Promise<Response>, why: RegExp): Promise<string> {
    const before = refusals();
    const res = await send();
    const html = await res.text();
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(html).not.toContain('<form');
    expect(html).toMatch(why);
    expect(refusals()).toBe(before + 1);
    return html;
  }

  const get = (url: string) => fetch(url, { redirect: 'manual' });

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    sp = await keyAndCertificate('crm signing');
    stranger = await keyAndCertificate('someone else');
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD);
    const answer = await graphqlPost(
      server,
      access_token,
      `mutation R($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId } }`,
      {
        input: {
          entityId: ENTITY,
          name: 'CRM',
          assertionConsumerServiceUrls: [ACS],
          singleLogoutServiceUrl: SLO,
          signingCertificate: sp.cert,
          wantAuthnRequestsSigned: true,
        },
      },
    );
    expect(answer.errors).toBeUndefined();
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('a well-formed signed request reaches the login page (the baseline of the cases below)', async () => {
    const res = await get(redirectUrl(authnRequest(), sp.key));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('name="password"');
  });

  test('a DTD with an entity is refused before parsing, and never expanded', async () => {
    const xml = `<?xml version="1.0"?><!DOCTYPE samlp:AuthnRequest [<!ENTITY xxe SYSTEM "file:///etc/passwd"><!ENTITY boom "BOOM">]>${authnRequest({ issuerText: '&xxe;&boom;' })}`;
    const html = await expectRefused(() => get(redirectUrl(xml, sp.key)), /DTD/);
    expect(html).not.toMatch(/root:|BOOM/);
    await expectRefused(() => postForm(`${server.url}/saml/v20/sso`, { SAMLRequest: Buffer.from(xml).toString('base64') }), /DTD/);
  });

  test('an oversized request and a deflate bomb are refused', async () => {
    const big = Buffer.from(
      authnRequest().replace('</samlp:AuthnRequest>', `<samlp:Extensions>${'x'.repeat(20_000)}</samlp:Extensions></samlp:AuthnRequest>`),
    ).toString('base64');
    await expectRefused(() => postForm(`${server.url}/saml/v20/sso`, { SAMLRequest: big }), /too long|larger than/);
    // 4 MB of one letter deflate to a few KB: the inflating stops at the limit.
    const bomb = Buffer.concat([
      Buffer.from(authnRequest().replace('</samlp:AuthnRequest>', '<samlp:Extensions>')),
      Buffer.alloc(4 * 1024 * 1024, 'A'),
    ]);
    const url = redirectUrl(bomb, null);
    expect(url.length).toBeLessThan(8192);
    await expectRefused(() => get(url), /inflates to more than/);
  });

  test('malformed XML, a message that is not an AuthnRequest, and one that is not base64 are refused', async () => {
    await expectRefused(
      () => get(redirectUrl('<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"><unclosed>', sp.key)),
      /malformed/,
    );
    await expectRefused(() => get(redirectUrl('<x xmlns="urn:example"/>', sp.key)), /not a SAML AuthnRequest/);
    await expectRefused(() => get(`${server.url}/saml/v20/sso?SAMLRequest=%%%%`), /invalid_request/);
    await expectRefused(() => get(`${server.url}/saml/v20/sso`), /no SAMLRequest/);
  });

  test('an unsigned request, a bad signature and SHA-1 are refused when the SP must sign', async () => {
    await expectRefused(() => get(redirectUrl(authnRequest(), null)), /not signed/);
    await expectRefused(() => get(redirectUrl(authnRequest(), stranger.key)), /signature is not valid/);
    await expectRefused(() => get(redirectUrl(authnRequest(), sp.key, 'http://www.w3.org/2000/09/xmldsig#rsa-sha1', 'RSA-SHA1')), /SigAlg/);
    // The same over the POST binding: no signature, and a signature by another key.
    await expectRefused(
      () => postForm(`${server.url}/saml/v20/sso`, { SAMLRequest: Buffer.from(authnRequest()).toString('base64') }),
      /not signed/,
    );
    await expectRefused(
      () =>
        postForm(`${server.url}/saml/v20/sso`, { SAMLRequest: Buffer.from(signedPost(authnRequest(), stranger.key)).toString('base64') }),
      /signature is not valid/,
    );
  });

  test('a signed POST request is accepted; changed after signing, or wrapped in another request, it is refused', async () => {
    const signed = signedPost(authnRequest(), sp.key);
    const ok = await postForm(`${server.url}/saml/v20/sso`, { SAMLRequest: Buffer.from(signed).toString('base64') });
    // Accepted: on to a GET of the checked request (which carries the SameSite=Lax session cookie).
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toMatch(/^\/saml\/v20\/sso\?saml_request=/);
    const tampered = signedPost(authnRequest(), sp.key).replace(
      `AssertionConsumerServiceURL="${ACS}"`,
      'AssertionConsumerServiceURL="https://evil.example/acs"',
    );
    await expectRefused(
      () => postForm(`${server.url}/saml/v20/sso`, { SAMLRequest: Buffer.from(tampered).toString('base64') }),
      /signature is not valid/,
    );
    // Signature wrapping: the signed request hides inside an unsigned one that names the attacker's ACS.
    const inner = signedPost(authnRequest(), sp.key);
    const wrapped = authnRequest({ acs: 'https://evil.example/acs' }).replace(
      '</samlp:AuthnRequest>',
      `<samlp:Extensions>${inner}</samlp:Extensions></samlp:AuthnRequest>`,
    );
    await expectRefused(
      () => postForm(`${server.url}/saml/v20/sso`, { SAMLRequest: Buffer.from(wrapped).toString('base64') }),
      /not signed|more than one signature/,
    );
  });

  test('a foreign ACS URL, an unknown issuer, a stale request and a replayed ID are refused', async () => {
    await expectRefused(
      () => get(redirectUrl(authnRequest({ acs: 'https://evil.example/acs' }), sp.key)),
      /not a registered AssertionConsumerServiceURL/,
    );
    await expectRefused(
      () => get(redirectUrl(authnRequest({ issuer: 'https://unknown.example/sp' }), sp.key)),
      /not a registered service provider/,
    );
    await expectRefused(
      () => get(redirectUrl(authnRequest({ instant: new Date(Date.now() - 60 * 60_000).toISOString() }), sp.key)),
      /too old/,
    );
    const id = newId();
    expect((await get(redirectUrl(authnRequest({ id }), sp.key))).status).toBe(200);
    await expectRefused(() => get(redirectUrl(authnRequest({ id }), sp.key)), /was used before/);
  });

  test('a LogoutRequest must be signed by an SP with a certificate, and is used once', async () => {
    const logoutRequest = (id: string) =>
      `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${now()}" Destination="${server.url}/saml/v20/slo"><saml:Issuer>${ENTITY}</saml:Issuer><saml:NameID>someone</saml:NameID></samlp:LogoutRequest>`;
    const sloUrl = (xml: string, key: string | null) => redirectUrl(xml, key).replace('/saml/v20/sso?', '/saml/v20/slo?');
    await expectRefused(() => get(sloUrl(logoutRequest(newId()), null)), /not signed/);
    const id = newId();
    // No session in this request: nothing to end, and the SP gets its signed LogoutResponse.
    const answered = await get(sloUrl(logoutRequest(id), sp.key));
    expect(answered.status).toBe(302);
    const location = new URL(answered.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(SLO);
    expect(location.searchParams.get('Signature')).toBeTruthy();
    await expectRefused(() => get(sloUrl(logoutRequest(id), sp.key)), /was used before/);
  });
});
