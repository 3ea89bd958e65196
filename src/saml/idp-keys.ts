import { createHash, KeyObject, webcrypto } from 'node:crypto';
import type { LoadedKey, SigningKeys } from '../keys/signing-keys.ts';

/**
 * @peculiar/x509, loaded when the first certificate is made: with its ASN.1 schemas it took about a
 * third of a second of every start (issue 37), and most deployments never ask for SAML metadata.
 */
let library: Promise<typeof import('@peculiar/x509')> | undefined;
const x509Library = () =>
  (library ??= (async () => {
    // It needs the Reflect metadata polyfill loaded first (its tsyringe container).
    await import('reflect-metadata');
    const x509 = await import('@peculiar/x509');
    x509.cryptoProvider.set(webcrypto as unknown as Crypto);
    return x509;
  })());

/** A certificate's life: the key rotates long before (keys.maxAge); SPs pin the certificate, not its dates. */
const CERT_YEARS = 20;
const RSA_SHA256 = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;

/** The IdP's signing key as SAML uses it: the private key for xml-crypto, the certificate for KeyInfo. */
export interface SamlSigner {
  privateKey: KeyObject;
  certificate: string;
}

/**
 * A self-signed certificate for a signing key: SAML publishes keys as X.509 certificates. It is
 * derived from the key alone (serial from the kid, dates from its creation, and RSA PKCS#1 v1.5
 * signatures are deterministic), so every process makes the very same certificate and an SP that
 * pinned it keeps working until the key rotates. Made with @peculiar/x509: no openssl at run time.
 */
async function certificateFor(key: LoadedKey, subject: string): Promise<string> {
  const publicKey = await webcrypto.subtle.importKey(
    'jwk',
    { ...key.publicJwk, alg: undefined, use: undefined, kid: undefined } as webcrypto.JsonWebKey,
    RSA_SHA256,
    true,
    ['verify'],
  );
  const serial = createHash('sha256').update(key.kid).digest().subarray(0, 16);
  serial[0]! &= 0x7f; // a positive serial number
  const notBefore = new Date(Math.floor(key.createdAt / 1000) * 1000);
  const notAfter = new Date(notBefore.getTime());
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + CERT_YEARS);
  const x509 = await x509Library();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: subject,
    notBefore,
    notAfter,
    signingAlgorithm: RSA_SHA256,
    keys: { privateKey: key.privateKey, publicKey },
    extensions: [new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true)],
  });
  return cert.toString('pem');
}

/** The certificates of the SAML keys, each made once per process. */
export function samlKeys(keys: SigningKeys, publicUrl: string) {
  const made = new Map<string, Promise<string>>();
  const subject = `CN=${new URL(publicUrl).hostname} SAML IdP`;
  const certificate = (key: LoadedKey) => {
    let cert = made.get(key.kid);
    if (!cert) made.set(key.kid, (cert = certificateFor(key, subject)));
    return cert;
  };
  return {
    /** The key that signs now. */
    async signer(): Promise<SamlSigner> {
      const { signing } = keys.rsa();
      return { privateKey: KeyObject.from(signing.privateKey), certificate: await certificate(signing) };
    },
    /** Every certificate the metadata lists: the signing one first. */
    certificates: (): Promise<string[]> => Promise.all(keys.rsa().published.map(certificate)),
  };
}

export type SamlKeys = ReturnType<typeof samlKeys>;
