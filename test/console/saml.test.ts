import { expect, test } from '@jest/globals';
import { keyAndCertificate } from '../helpers/saml-sp.ts';
import { ADMIN_PASSWORD } from '../helpers/server.ts';
import { consoleSuite, checkSection, expectOnlyOwnOrigin, signIn, watchedContext } from './harness.ts';

/** docs/saml-applications.md in the console: the IdP's values to enter at an application, and SAML SPs registered from metadata, edited, deleted. */
const suite = consoleSuite();

const ENTITY = 'https://wiki.example.com/saml/metadata';
const metadataWith = (
  cert: string,
) => `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${ENTITY}">
  <md:SPSSODescriptor AuthnRequestsSigned="true" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${cert.replace(/-----[A-Z ]+-----|\s/g, '')}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://wiki.example.com/saml/slo"/>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>
    <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://wiki.example.com/saml/acs" index="0"/>
  </md:SPSSODescriptor>
</md:EntityDescriptor>`;

test('the SAML section shows what to enter at an application, registers one from its metadata, edits and deletes it', async () => {
  const { server, browser } = suite;
  const { cert } = await keyAndCertificate('wiki');
  const { context, page, requests } = await watchedContext(browser, 'desktop');
  try {
    await signIn(server, page, 'admin', ADMIN_PASSWORD);
    await page.getByRole('link', { name: 'SAML applications' }).click();
    await page.getByRole('heading', { level: 1, name: 'SAML applications' }).waitFor();
    const idp = page.locator('section', { has: page.getByRole('heading', { name: 'What to enter in the application' }) });
    await expect(idp.textContent()).resolves.toContain(`${server.url}/saml/v20/sso`);
    await expect(idp.textContent()).resolves.toContain(`${server.url}/saml/v20/metadata`);
    await page.getByText('No SAML applications yet.').waitFor();

    await page.getByRole('button', { name: 'Register a SAML application' }).click();
    await page.getByLabel('SP metadata (XML)').fill('<!DOCTYPE x [<!ENTITY e "e">]><x/>');
    await page.getByRole('button', { name: 'Register application' }).click();
    await expect(page.locator('#saml-form').getByRole('alert').textContent()).resolves.toMatch(/SP metadata: .*DTD/);

    await page.getByLabel('SP metadata (XML)').fill(metadataWith(cert));
    await page.getByLabel('Name', { exact: true }).fill('Team wiki');
    await checkSection(page, 'saml-form', 'desktop');
    await page.getByRole('button', { name: 'Register application' }).click();
    await page.getByText('Team wiki is registered.').waitFor();
    const row = page.getByRole('row', { name: /Team wiki/ });
    await expect(row.textContent()).resolves.toContain('https://wiki.example.com/saml/acs');
    await expect(row.textContent()).resolves.toContain('signed requests');
    const stored = (await server.ctx.samlProviders.find(ENTITY))!;
    expect(stored).toMatchObject({
      name: 'Team wiki',
      nameIdFormat: 'emailAddress',
      wantAuthnRequestsSigned: true,
      singleLogoutServiceUrl: 'https://wiki.example.com/saml/slo',
      allowIdpInitiated: false,
    });
    await checkSection(page, 'saml', 'desktop');

    await page.getByRole('button', { name: 'Edit Team wiki' }).click();
    await page.getByLabel('Allow IdP-initiated sign-on').check();
    await page.getByLabel('groups').uncheck();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Team wiki is saved.').waitFor();
    expect(await server.ctx.samlProviders.find(ENTITY)).toMatchObject({
      allowIdpInitiated: true,
      attributes: ['uid', 'mail', 'displayName'],
    });

    await page.getByRole('button', { name: 'Delete Team wiki' }).click();
    await page.getByRole('button', { name: 'Delete application' }).click();
    await page.getByText('Team wiki is deleted.').waitFor();
    expect(await server.ctx.samlProviders.find(ENTITY)).toBeUndefined();
    expectOnlyOwnOrigin(server, requests);
  } finally {
    await context.close();
  }
});
