import { createSign } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { SignedXml } from 'xml-crypto';

export const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';

/**
 * An SP's HTTP-Redirect URL for `xml` at `ssoUrl`: deflated, with `RelayState`, and signed with `key`
 * (SAML bindings 3.4.4.1: the signature covers the query as sent) unless `key` is null.
 */
export function redirectBindingUrl(
  ssoUrl: string,
  xml: string | Buffer,
  key: string | null,
  o: { relayState?: string; sigAlg?: string; hash?: string } = {},
): string {
  const deflated = deflateRawSync(typeof xml === 'string' ? Buffer.from(xml) : xml).toString('base64');
  let query = `SAMLRequest=${encodeURIComponent(deflated)}&RelayState=${encodeURIComponent(o.relayState ?? 'r1')}`;
  if (key) {
    query += `&SigAlg=${encodeURIComponent(o.sigAlg ?? RSA_SHA256)}`;
    query += `&Signature=${encodeURIComponent(
      createSign(o.hash ?? 'RSA-SHA256')
        .update(query)
        .sign(key)
        .toString('base64'),
    )}`;
  }
  return `${ssoUrl}?${query}`;
}

/** An enveloped signature over the message's root, after its Issuer, as an SP signs a POST-binding request. */
export function signedPost(xml: string, key: string): string {
  const sig = new SignedXml({
    privateKey: key,
    signatureAlgorithm: RSA_SHA256,
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  sig.addReference({
    xpath: '/*',
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
  });
  sig.computeSignature(xml, { prefix: 'ds', location: { reference: "/*/*[local-name(.)='Issuer']", action: 'after' } });
  return sig.getSignedXml();
}
