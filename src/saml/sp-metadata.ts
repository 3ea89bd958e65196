import type { NameIdFormat } from './model.ts';
import { children, MAX_METADATA_BYTES, NS, onlyChild, parseXml, SamlInputError, toPem, xsBoolean } from './xml.ts';

export const BINDINGS = {
  post: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST',
  redirect: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect',
  soap: 'urn:oasis:names:tc:SAML:2.0:bindings:SOAP',
} as const;

/** The NameID format URIs, by the short names Latchkey stores. */
export const NAME_ID_FORMAT_URIS: Record<NameIdFormat, string> = {
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  emailAddress: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
  transient: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
};

export const nameIdFormatOf = (uri: string): NameIdFormat | undefined =>
  (Object.entries(NAME_ID_FORMAT_URIS) as Array<[NameIdFormat, string]>).find(([, u]) => u === uri)?.[0];

/** What an SP's metadata says, as registration fields. */
export interface SpMetadata {
  entityId: string;
  assertionConsumerServiceUrls: string[];
  /** Each URL's `index`, in the same order (the default first, then by index). */
  acsIndexes: number[];
  singleLogoutServiceUrl: string | null;
  /** Its SOAP SingleLogoutService (docs/saml-applications.md "Single logout by SOAP"). */
  singleLogoutSoapUrl: string | null;
  signingCertificate: string | null;
  encryptionCertificate: string | null;
  /** Absent when the metadata names none Latchkey issues (it is optional): the registration's default then holds. */
  nameIdFormat?: NameIdFormat;
  wantAuthnRequestsSigned: boolean;
  /** Present only when `WantAssertionsSigned` is true: the registration's default (signed) holds otherwise. */
  signAssertions?: true;
  /** Only when a KeyDescriptor says `use="encryption"`: a key of no stated use is not a request for encryption. */
  encryptAssertions: boolean;
}

/** An endpoint's `index` (an xs:unsignedShort, required on indexed endpoints; 0 when an SP leaves it out). */
function indexOf(e: Element): number {
  const raw = (e.getAttribute('index') ?? '').trim();
  if (raw === '') return 0;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535)
    throw new SamlInputError(`AssertionConsumerService index="${raw.slice(0, 20)}" is not a number from 0 to 65535`);
  return Number(raw);
}

function certificateOf(key: Element): string | null {
  const info = onlyChild(key, NS.dsig, 'KeyInfo');
  const data = info && children(info, NS.dsig, 'X509Data')[0];
  const cert = data && children(data, NS.dsig, 'X509Certificate')[0];
  return cert?.textContent ? toPem(cert.textContent) : null;
}

/**
 * Reads an SP's `EntityDescriptor` (SAML metadata 2.0): its entityID, the HTTP-POST assertion
 * consumer services (default first, then by index), the HTTP-Redirect and SOAP single logout services, its
 * signing and encryption certificates (a KeyDescriptor without `use` is both), the first NameID
 * format Latchkey issues, and whether it signs its requests. Parsed as any other untrusted XML.
 */
export function readSpMetadata(xml: string): SpMetadata {
  const root = parseXml(xml, MAX_METADATA_BYTES).documentElement;
  if (root.namespaceURI !== NS.metadata || root.localName !== 'EntityDescriptor')
    throw new SamlInputError('metadataXml must be one EntityDescriptor');
  const entityId = root.getAttribute('entityID') ?? '';
  if (!entityId) throw new SamlInputError('the EntityDescriptor has no entityID');
  const sp = onlyChild(root, NS.metadata, 'SPSSODescriptor');
  if (!sp) throw new SamlInputError('the EntityDescriptor has no SPSSODescriptor');

  const acs = children(sp, NS.metadata, 'AssertionConsumerService')
    .filter((e) => e.getAttribute('Binding') === BINDINGS.post)
    .map((e) => ({ url: e.getAttribute('Location') ?? '', isDefault: xsBoolean(e, 'isDefault'), index: indexOf(e) }))
    .sort((a, b) => Number(b.isDefault) - Number(a.isDefault) || a.index - b.index);
  if (acs.length === 0) throw new SamlInputError('the SPSSODescriptor has no HTTP-POST AssertionConsumerService');
  const sloOf = (binding: string) =>
    children(sp, NS.metadata, 'SingleLogoutService')
      .find((e) => e.getAttribute('Binding') === binding)
      ?.getAttribute('Location') || null;

  let signingCertificate: string | null = null;
  let encryptionCertificate: string | null = null;
  let encryptAssertions = false;
  for (const key of children(sp, NS.metadata, 'KeyDescriptor')) {
    const use = key.getAttribute('use');
    const cert = certificateOf(key);
    if (!cert) continue;
    if (use !== 'encryption') signingCertificate ??= cert;
    if (use !== 'signing') encryptionCertificate ??= cert;
    if (use === 'encryption') encryptAssertions = true;
  }
  const format = children(sp, NS.metadata, 'NameIDFormat')
    .map((e) => nameIdFormatOf((e.textContent ?? '').trim()))
    .find((f) => f !== undefined);
  const wantAssertionsSigned = xsBoolean(sp, 'WantAssertionsSigned');
  return {
    entityId,
    assertionConsumerServiceUrls: acs.map((e) => e.url),
    acsIndexes: acs.map((e) => e.index),
    singleLogoutServiceUrl: sloOf(BINDINGS.redirect),
    singleLogoutSoapUrl: sloOf(BINDINGS.soap),
    signingCertificate,
    encryptionCertificate,
    wantAuthnRequestsSigned: xsBoolean(sp, 'AuthnRequestsSigned'),
    encryptAssertions,
    // Only what the metadata says: an undefined key would be laid over the registration's defaults.
    ...(format ? { nameIdFormat: format } : {}),
    ...(wantAssertionsSigned ? { signAssertions: true as const } : {}),
  };
}
