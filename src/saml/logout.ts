import { deflateRawSync } from 'node:zlib';
import { newId } from './assertion.ts';
import type { Participant } from './model.ts';
import { signedRedirectQuery } from './signatures.ts';
import { NAME_ID_FORMAT_URIS } from './sp-metadata.ts';
import { escapeXml, NS } from './xml.ts';
import type { SamlSigner } from './idp-keys.ts';

const instant = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const deflated = (xml: string) => deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64');
const withQuery = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`;

/**
 * The answer to an SP's LogoutRequest, by the HTTP-Redirect binding, signed in the query: the URL
 * the browser is sent to.
 */
export function logoutResponseUrl(
  o: { issuer: string; destination: string; inResponseTo: string; relayState?: string; now: number; success: boolean },
  signer: SamlSigner,
): string {
  const status = o.success ? 'Success' : 'Responder';
  const xml =
    `<samlp:LogoutResponse xmlns:samlp="${NS.protocol}" xmlns:saml="${NS.assertion}" ID="${newId()}" Version="2.0" IssueInstant="${instant(o.now)}" Destination="${escapeXml(o.destination)}" InResponseTo="${escapeXml(o.inResponseTo)}">` +
    `<saml:Issuer>${escapeXml(o.issuer)}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:${status}"/></samlp:Status></samlp:LogoutResponse>`;
  return withQuery(o.destination, signedRedirectQuery('SAMLResponse', deflated(xml), o.relayState, signer.privateKey));
}

/** A LogoutRequest to another SP of the ended session (the IdP's front-channel logout), signed in the query. */
export function logoutRequestUrl(
  o: { issuer: string; destination: string; participant: Participant; sessionIndex: string; relayState: string; now: number },
  signer: SamlSigner,
): { url: string; id: string } {
  const id = newId();
  const xml =
    `<samlp:LogoutRequest xmlns:samlp="${NS.protocol}" xmlns:saml="${NS.assertion}" ID="${id}" Version="2.0" IssueInstant="${instant(o.now)}" Destination="${escapeXml(o.destination)}" NotOnOrAfter="${instant(o.now + 5 * 60_000)}">` +
    `<saml:Issuer>${escapeXml(o.issuer)}</saml:Issuer>` +
    `<saml:NameID Format="${NAME_ID_FORMAT_URIS[o.participant.nameIdFormat]}">${escapeXml(o.participant.nameId)}</saml:NameID>` +
    `<samlp:SessionIndex>${escapeXml(o.sessionIndex)}</samlp:SessionIndex></samlp:LogoutRequest>`;
  return { url: withQuery(o.destination, signedRedirectQuery('SAMLRequest', deflated(xml), o.relayState, signer.privateKey)), id };
}
