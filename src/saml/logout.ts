import { deflateRawSync } from 'node:zlib';
import { newId } from './assertion.ts';
import type { NameIdFormat, Participant } from './model.ts';
import { signedRedirectQuery, signRoot } from './signatures.ts';
import { NAME_ID_FORMAT_URIS } from './sp-metadata.ts';
import { escapeXml, NS, onlyChild, parseXml } from './xml.ts';
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

/** What a LogoutRequest of the IdP names: the NameID the SP was given in the session, and its SessionIndex. */
export interface LogoutSubject {
  nameId: string;
  nameIdFormat: NameIdFormat;
  /** The assertions' `SessionIndex`: the session's `sid`. */
  sessionIndex: string;
}

/** The IdP's LogoutRequest to an SP, unsigned: good for 5 minutes (`NotOnOrAfter`). */
function logoutRequestXml(o: { issuer: string; destination: string; subject: LogoutSubject; now: number }): { xml: string; id: string } {
  const id = newId();
  const xml =
    `<samlp:LogoutRequest xmlns:samlp="${NS.protocol}" xmlns:saml="${NS.assertion}" ID="${id}" Version="2.0" IssueInstant="${instant(o.now)}" Destination="${escapeXml(o.destination)}" NotOnOrAfter="${instant(o.now + 5 * 60_000)}">` +
    `<saml:Issuer>${escapeXml(o.issuer)}</saml:Issuer>` +
    `<saml:NameID Format="${NAME_ID_FORMAT_URIS[o.subject.nameIdFormat]}">${escapeXml(o.subject.nameId)}</saml:NameID>` +
    `<samlp:SessionIndex>${escapeXml(o.subject.sessionIndex)}</samlp:SessionIndex></samlp:LogoutRequest>`;
  return { xml, id };
}

/** A LogoutRequest to another SP of the ended session (the IdP's front-channel logout), signed in the query. */
export function logoutRequestUrl(
  o: { issuer: string; destination: string; participant: Participant; sessionIndex: string; relayState: string; now: number },
  signer: SamlSigner,
): { url: string; id: string } {
  const { participant: p } = o;
  const { xml, id } = logoutRequestXml({ ...o, subject: { nameId: p.nameId, nameIdFormat: p.nameIdFormat, sessionIndex: o.sessionIndex } });
  return { url: withQuery(o.destination, signedRedirectQuery('SAMLRequest', deflated(xml), o.relayState, signer.privateKey)), id };
}

const SOAP_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
const STATUS = 'urn:oasis:names:tc:SAML:2.0:status:';
/** The top-level status codes of SAML Core 3.2.2.2: the only words of an SP's answer a failure may repeat. */
const TOP_STATUSES = new Set(['Requester', 'Responder', 'VersionMismatch']);

/**
 * A LogoutRequest by the SOAP binding (SAML bindings 3.2): signed with an enveloped signature over the
 * request (RSA-SHA256, exclusive c14n, so the envelope around it changes nothing), in a SOAP 1.1
 * envelope. Returns the envelope and the request's ID, which the answer must name.
 */
export function soapLogoutRequest(o: { issuer: string; destination: string; subject: LogoutSubject; now: number }, signer: SamlSigner) {
  const { xml, id } = logoutRequestXml(o);
  const envelope =
    `<?xml version="1.0" encoding="UTF-8"?><soap-env:Envelope xmlns:soap-env="${SOAP_ENV}"><soap-env:Body>` +
    `${signRoot(xml, signer)}</soap-env:Body></soap-env:Envelope>`;
  return { envelope, id };
}

/**
 * What an SP answered to a SOAP LogoutRequest: undefined for a `LogoutResponse` with status Success
 * (to this request, when it says which), else why not, in fixed words: never the SP's own text. The
 * answer comes back on the connection Latchkey opened to the registered URL (SAML bindings 3.2.2.2):
 * its signature is not asked for; a forged Success could only stop the retries.
 */
export function soapLogoutOutcome(answer: string, requestId: string): string | undefined {
  let envelope: Element;
  try {
    envelope = parseXml(answer).documentElement;
  } catch {
    return 'not a SOAP answer';
  }
  if (envelope.namespaceURI !== SOAP_ENV || envelope.localName !== 'Envelope') return 'not a SOAP answer';
  try {
    const body = onlyChild(envelope, SOAP_ENV, 'Body');
    if (!body) return 'not a SOAP answer';
    if (onlyChild(body, SOAP_ENV, 'Fault')) return 'SOAP fault';
    const response = onlyChild(body, NS.protocol, 'LogoutResponse');
    if (!response) return 'no LogoutResponse';
    const inResponseTo = response.getAttribute('InResponseTo');
    if (inResponseTo && inResponseTo !== requestId) return 'a LogoutResponse to another request';
    const status = onlyChild(response, NS.protocol, 'Status');
    const code = (status && onlyChild(status, NS.protocol, 'StatusCode')?.getAttribute('Value')) ?? '';
    if (code === `${STATUS}Success`) return undefined;
    const name = code.startsWith(STATUS) ? code.slice(STATUS.length) : '';
    return TOP_STATUSES.has(name) ? `LogoutResponse status ${name}` : 'LogoutResponse not Success';
  } catch {
    return 'not a SOAP answer';
  }
}
