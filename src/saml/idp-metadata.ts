import { BINDINGS, NAME_ID_FORMAT_URIS } from './sp-metadata.ts';
import { escapeXml, NS, pemBody } from './xml.ts';

/**
 * The IdP's metadata (docs/saml-applications.md): an EntityDescriptor with one IDPSSODescriptor listing the signing
 * certificates (the one that signs now first; a key waiting to sign is listed before it signs), SSO
 * over HTTP-Redirect and HTTP-POST, SLO over HTTP-Redirect, and the NameID formats issued.
 */
export function idpMetadata(o: { entityId: string; ssoUrl: string; sloUrl: string; certificates: string[] }): string {
  const keys = o.certificates
    .map(
      (c) =>
        `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${pemBody(c)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`,
    )
    .join('');
  const formats = Object.values(NAME_ID_FORMAT_URIS)
    .map((f) => `<md:NameIDFormat>${f}</md:NameIDFormat>`)
    .join('');
  const sso = escapeXml(o.ssoUrl);
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<md:EntityDescriptor xmlns:md="${NS.metadata}" xmlns:ds="${NS.dsig}" entityID="${escapeXml(o.entityId)}">` +
    `<md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
    keys +
    `<md:SingleLogoutService Binding="${BINDINGS.redirect}" Location="${escapeXml(o.sloUrl)}"/>` +
    formats +
    `<md:SingleSignOnService Binding="${BINDINGS.redirect}" Location="${sso}"/>` +
    `<md:SingleSignOnService Binding="${BINDINGS.post}" Location="${sso}"/>` +
    `</md:IDPSSODescriptor></md:EntityDescriptor>\n`
  );
}
