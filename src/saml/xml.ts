import { inflateRawSync } from 'node:zlib';
import { DomParser } from './xml-libraries.ts';

/** The SAML namespaces. */
export const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
} as const;

/** The largest SAML message accepted (decoded): requests are a few KB; metadata can list many certificates. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
export const MAX_METADATA_BYTES = 256 * 1024;

/** Input the IdP refuses: shown as a 400 page (never sent anywhere), logged in one line. */
export class SamlInputError extends Error {}

/**
 * Parses untrusted XML. A DTD (and so any entity) is refused before the parser sees the text: the
 * parser never expands or fetches anything, and XXE and billion-laughs have nothing to work with.
 * Parser errors and warnings are refusals too: a document the parser had to repair is not signed text.
 */
export function parseXml(xml: string, maxBytes = MAX_MESSAGE_BYTES): Document {
  if (Buffer.byteLength(xml, 'utf8') > maxBytes) throw new SamlInputError(`the XML is larger than ${maxBytes} bytes`);
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new SamlInputError('the XML has a DTD or an entity declaration, which are not accepted');
  const fail = (message: string) => {
    throw new SamlInputError(`the XML is malformed: ${message.split('\n')[0]}`);
  };
  const doc = new (DomParser())({ errorHandler: { warning: fail, error: fail, fatalError: fail } }).parseFromString(xml, 'text/xml');
  if (!doc?.documentElement) throw new SamlInputError('the XML is empty');
  return doc as unknown as Document;
}

/** Base64 of a POST binding (or of the Redirect binding before inflating), strictly: no stray characters. */
export function fromBase64(value: string, maxBytes = MAX_MESSAGE_BYTES): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (compact.length > Math.ceil((maxBytes * 4) / 3) + 4) throw new SamlInputError(`the message is larger than ${maxBytes} bytes`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw new SamlInputError('the message is not base64');
  return Buffer.from(compact, 'base64');
}

/**
 * The Redirect binding's DEFLATE, inflated with a hard limit on the output: a deflate bomb (a few KB
 * that inflate to gigabytes) stops at the limit instead of filling memory.
 */
export function inflateBounded(data: Buffer, maxBytes = MAX_MESSAGE_BYTES): string {
  try {
    return inflateRawSync(data, { maxOutputLength: maxBytes }).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      throw new SamlInputError(`the message inflates to more than ${maxBytes} bytes`);
    throw new SamlInputError('the message is not DEFLATE-compressed');
  }
}

/** The child elements of `parent` named `local` in namespace `ns`. */
export function children(parent: Element, ns: string, local: string): Element[] {
  const found: Element[] = [];
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1 && (n as Element).namespaceURI === ns && (n as Element).localName === local) found.push(n as Element);
  }
  return found;
}

/** The only child named so, or undefined; two are a refusal (a second one is how wrapping attacks hide). */
export function onlyChild(parent: Element, ns: string, local: string): Element | undefined {
  const found = children(parent, ns, local);
  if (found.length > 1) throw new SamlInputError(`more than one ${local} element`);
  return found[0];
}

/** Characters XML 1.0 cannot carry at all, even escaped: an attribute value holding one is sent without it. */
const NOT_XML = /[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

/** Text for an XML text node or attribute value. */
export const escapeXml = (s: string): string =>
  s.replace(NOT_XML, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

/** A certificate as PEM, from PEM or the bare base64 of metadata's X509Certificate. */
export function toPem(cert: string): string {
  const body = cert.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  return `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)?.join('\n') ?? ''}\n-----END CERTIFICATE-----\n`;
}

/** The base64 body of a PEM certificate (for KeyInfo and metadata). */
export const pemBody = (pem: string): string => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

/**
 * An `xs:boolean` attribute (XML Schema 1.0 §3.2.2): `true`, `false`, `1` or `0`, surrounding white
 * space collapsed. Shibboleth writes `1`; reading only `'true'` once turned its `ForceAuthn="1"` into
 * false. Absent is `fallback`; any other spelling is a refusal, never a guess.
 */
export function xsBoolean(element: Element, name: string, fallback = false): boolean {
  if (!element.hasAttribute(name)) return fallback;
  const value = (element.getAttribute(name) ?? '').trim();
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new SamlInputError(`${element.localName} ${name}="${value.slice(0, 20)}" is not an xs:boolean (true, false, 1 or 0)`);
}
