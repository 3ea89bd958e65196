import { verifiedRoot, verifyRedirect, type RedirectMessage } from './signatures.ts';
import { fromBase64, inflateBounded, NS, onlyChild, parseXml, SamlInputError } from './xml.ts';
import type { ServiceProvider } from './model.ts';
import { clock } from '../clock.ts';

/** How far an SP's clock may be off, and how old a request may be. */
export const CLOCK_SKEW_MS = 3 * 60 * 1000;
export const REQUEST_MAX_AGE_MS = 5 * 60 * 1000;

/** A message as it came: by which binding, its decoded XML, and the query (the Redirect binding signs it). */
export interface Incoming {
  binding: 'redirect' | 'post';
  xml: string;
  /** The raw query string (Redirect binding). */
  query: string;
}

/**
 * Decodes a message of either binding: the Redirect one is DEFLATE (inflated with a hard limit), the
 * POST one plain XML, or DEFLATE as node-saml (passport-saml) sends it by default, inflated with the
 * same limit.
 */
export function decode(binding: 'redirect' | 'post', value: string, query: string): Incoming {
  const bytes = fromBase64(value);
  const plain = binding === 'post' && /^\s*(\uFEFF)?</.test(bytes.subarray(0, 64).toString('utf8'));
  return { binding, xml: plain ? bytes.toString('utf8') : inflateBounded(bytes), query };
}

/** A message's root, parsed, and its issuer: the issuer names the SP whose certificate checks it. */
export function open(incoming: Incoming, expected: 'AuthnRequest' | 'LogoutRequest' | 'LogoutResponse'): { doc: Document; issuer: string } {
  const doc = parseXml(incoming.xml);
  const root = doc.documentElement;
  if (root.namespaceURI !== NS.protocol || root.localName !== expected) throw new SamlInputError(`the message is not a SAML ${expected}`);
  if (root.getAttribute('Version') !== '2.0') throw new SamlInputError('the message is not SAML 2.0');
  const issuer = onlyChild(root, NS.assertion, 'Issuer')?.textContent?.trim();
  if (!issuer) throw new SamlInputError('the message has no Issuer');
  return { doc, issuer };
}

/**
 * The message as its SP signed it. A signature is checked whenever the SP has a certificate (by the
 * binding's own means: the query for Redirect, the enveloped signature for POST), and required when
 * `required`; what is read afterwards is the signed element itself.
 */
export function authenticated(
  incoming: Incoming,
  doc: Document,
  sp: ServiceProvider,
  required: boolean,
  message: RedirectMessage,
): Element {
  if (sp.signingCertificate) {
    if (incoming.binding === 'redirect') {
      if (verifyRedirect(incoming.query, message, sp.signingCertificate)) return doc.documentElement;
    } else {
      const signed = verifiedRoot(incoming.xml, doc, sp.signingCertificate);
      if (signed) return signed;
    }
  }
  if (required) throw new SamlInputError('the message is not signed, and this service provider must sign it');
  return doc.documentElement;
}

/** The message's ID, and its IssueInstant within the accepted window. */
export function idAndTime(root: Element): string {
  const id = root.getAttribute('ID') ?? '';
  if (!/^[A-Za-z_][\w.-]{0,255}$/.test(id)) throw new SamlInputError('the message ID is missing or not an NCName');
  const instant = Date.parse(root.getAttribute('IssueInstant') ?? '');
  const now = clock.now();
  if (Number.isNaN(instant)) throw new SamlInputError('the message has no IssueInstant');
  if (instant > now + CLOCK_SKEW_MS || instant < now - REQUEST_MAX_AGE_MS - CLOCK_SKEW_MS)
    throw new SamlInputError('the message is too old, or from the future');
  return id;
}

/** The Destination, when given, must be this endpoint (a message for another IdP is not ours to act on). */
export function checkDestination(root: Element, url: string): void {
  const destination = root.getAttribute('Destination');
  if (destination && destination !== url) throw new SamlInputError(`the message is for ${destination}, not ${url}`);
}
