import { createSign, createVerify, type KeyObject } from 'node:crypto';
import { SignedXml } from './xml-libraries.ts';
import { children, NS, parseXml, SamlInputError } from './xml.ts';
import type { SamlSigner } from './idp-keys.ts';

export const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const SHA256 = 'http://www.w3.org/2001/04/xmlenc#sha256';
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';

/** The signature algorithms accepted from an SP, and the hash each names (SHA-1 is refused). */
const ACCEPTED_SIG_ALGS: Record<string, string> = {
  [RSA_SHA256]: 'RSA-SHA256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384': 'RSA-SHA384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512': 'RSA-SHA512',
};

/**
 * Signs the root element of `xml` (an Assertion, a Response) with an enveloped signature by
 * xml-crypto: RSA-SHA256, SHA-256 digest, exclusive c14n, placed after the Issuer as the schema
 * wants, the certificate in KeyInfo. The reference is the root's ID, and nothing else is signed.
 */
export function signRoot(xml: string, signer: SamlSigner): string {
  const sig = new (SignedXml())({
    privateKey: signer.privateKey,
    publicCert: signer.certificate,
    signatureAlgorithm: RSA_SHA256,
    canonicalizationAlgorithm: EXC_C14N,
  });
  sig.addReference({ xpath: '/*', digestAlgorithm: SHA256, transforms: [ENVELOPED, EXC_C14N] });
  sig.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: `/*/*[local-name(.)='Issuer' and namespace-uri(.)='${NS.assertion}']`, action: 'after' },
  });
  return sig.getSignedXml();
}

/**
 * Verifies the enveloped signature of a message's root element with the SP's certificate (never one
 * the message carries), and returns the message as signed: the canonical text xml-crypto checked,
 * parsed again. The signature must be a direct child of the root, the only one, and its one reference
 * must be the root's ID: what the IdP reads next is exactly what was signed (no signature wrapping).
 * Undefined when the root carries no signature.
 */
export function verifiedRoot(xml: string, doc: Document, certificate: string): Element | undefined {
  const root = doc.documentElement;
  const signatures = children(root, NS.dsig, 'Signature');
  if (signatures.length === 0) return undefined;
  if (signatures.length > 1 || doc.getElementsByTagNameNS(NS.dsig, 'Signature').length > 1)
    throw new SamlInputError('more than one signature');
  const id = root.getAttribute('ID');
  if (!id) throw new SamlInputError('the signed element has no ID');
  const sig = new (SignedXml())({ publicCert: certificate, getCertFromKeyInfo: () => null });
  for (const alg of Object.keys(sig.SignatureAlgorithms)) if (!ACCEPTED_SIG_ALGS[alg]) delete sig.SignatureAlgorithms[alg];
  let valid = false;
  try {
    sig.loadSignature(signatures[0]!);
    valid = sig.checkSignature(xml);
  } catch (err) {
    throw new SamlInputError(`the signature is not valid: ${(err as Error).message}`);
  }
  const references = sig.getReferences();
  if (!valid || references.length !== 1 || references[0]!.uri !== `#${id}`)
    throw new SamlInputError('the signature is not valid for this message');
  const [signed] = sig.getSignedReferences();
  if (!signed) throw new SamlInputError('the signature is not valid for this message');
  const signedRoot = parseXml(signed).documentElement;
  if (signedRoot.getAttribute('ID') !== id || signedRoot.localName !== root.localName || signedRoot.namespaceURI !== root.namespaceURI) {
    throw new SamlInputError('the signature does not cover the message');
  }
  return signedRoot;
}

/** The raw (still URL-encoded) values of a query string, as the Redirect binding signs them. */
function rawQuery(query: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const pair of query.split('&')) {
    const at = pair.indexOf('=');
    const name = at < 0 ? pair : pair.slice(0, at);
    if (found.has(name)) throw new SamlInputError(`${name} is given twice`);
    found.set(name, at < 0 ? '' : pair.slice(at + 1));
  }
  return found;
}

/** Which of the two messages a Redirect-binding query carries. */
export type RedirectMessage = 'SAMLRequest' | 'SAMLResponse';

/**
 * Checks the HTTP-Redirect binding's signature (SAML bindings 3.4.4.1): over
 * `SAMLRequest=…&RelayState=…&SigAlg=…` exactly as the query carried them. False when the query has
 * no signature; a bad one, or a refused algorithm, is an error.
 */
export function verifyRedirect(query: string, message: RedirectMessage, certificate: string): boolean {
  const raw = rawQuery(query);
  const signature = raw.get('Signature');
  const sigAlg = raw.get('SigAlg');
  if (signature === undefined && sigAlg === undefined) return false;
  const alg = ACCEPTED_SIG_ALGS[decodeURIComponent(sigAlg ?? '')];
  if (!alg || !signature) throw new SamlInputError('SigAlg is not an accepted signature algorithm (RSA-SHA256 or stronger)');
  const signed = [message, 'RelayState', 'SigAlg']
    .filter((n) => raw.has(n))
    .map((n) => `${n}=${raw.get(n)}`)
    .join('&');
  const ok = createVerify(alg)
    .update(signed)
    .verify(certificate, Buffer.from(decodeURIComponent(signature), 'base64'));
  if (!ok) throw new SamlInputError('the request signature is not valid');
  return true;
}

/** A Redirect-binding query for `message` (deflated, base64), signed with RSA-SHA256. */
export function signedRedirectQuery(
  message: RedirectMessage,
  deflatedBase64: string,
  relayState: string | undefined,
  privateKey: KeyObject,
): string {
  let query = `${message}=${encodeURIComponent(deflatedBase64)}`;
  if (relayState !== undefined) query += `&RelayState=${encodeURIComponent(relayState)}`;
  query += `&SigAlg=${encodeURIComponent(RSA_SHA256)}`;
  const signature = createSign('RSA-SHA256').update(query).sign(privateKey).toString('base64');
  return `${query}&Signature=${encodeURIComponent(signature)}`;
}
