import { randomBytes, X509Certificate } from 'node:crypto';
import { promisify } from 'node:util';
import type { EncryptOptions } from 'xml-encryption';
import type { Amr } from '../login/model.ts';
import type { SamlAttribute } from '../access/mappings.ts';
import type { SamlSigner } from './idp-keys.ts';
import type { NameIdFormat, ServiceProvider } from './model.ts';
import { signRoot } from './signatures.ts';
import { xmlenc } from './xml-libraries.ts';
import { NAME_ID_FORMAT_URIS } from './sp-metadata.ts';
import { escapeXml, NS } from './xml.ts';

const encrypt = (content: string, options: EncryptOptions): Promise<string> => promisify(xmlenc().encrypt)(content, options);

/** How long an assertion may be used (docs/saml-applications.md). */
export const ASSERTION_TTL_MS = 5 * 60 * 1000;

export const AUTHN_CONTEXT = {
  password: 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport',
  /** No password was typed here (a federated sign-in): the SP is not told one was. */
  unspecified: 'urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified',
  /** The REFEDS MFA profile: two kinds of factor were used. */
  multiFactor: 'https://refeds.org/profile/mfa',
  /** A Kerberos ticket (desktop single sign-on, docs/identity-backends.md "Desktop single sign-on"). */
  kerberos: 'urn:oasis:names:tc:SAML:2.0:ac:classes:Kerberos',
} as const;

const STATUS = 'urn:oasis:names:tc:SAML:2.0:status:';

/** An ID for a message Latchkey writes: an NCName, 160 random bits. */
export const newId = (): string => `_${randomBytes(20).toString('hex')}`;
const instant = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** One attribute as the assertion carries it: its NameFormat, its FriendlyName when it has one, a value per AttributeValue. */
function attributeXml(a: SamlAttribute): string {
  const friendly = a.friendlyName ? ` FriendlyName="${escapeXml(a.friendlyName)}"` : '';
  const values = a.values.map((v) => `<saml:AttributeValue xsi:type="xs:string">${escapeXml(v)}</saml:AttributeValue>`).join('');
  return `<saml:Attribute Name="${escapeXml(a.name)}" NameFormat="${escapeXml(a.nameFormat)}"${friendly}>${values}</saml:Attribute>`;
}

function attributeStatement(attributes: readonly SamlAttribute[]): string {
  return attributes.length ? `<saml:AttributeStatement>${attributes.map(attributeXml).join('')}</saml:AttributeStatement>` : '';
}

/** What an assertion says and where it goes. */
export interface AssertionFacts {
  issuer: string;
  sp: ServiceProvider;
  acsUrl: string;
  /** The AuthnRequest's ID; none for IdP-initiated sign-on. */
  inResponseTo?: string;
  /** What it tells of the user (src/saml/release.ts). */
  nameId: string;
  nameIdFormat: NameIdFormat;
  attributes: readonly SamlAttribute[];
  authTime: number;
  amr: Amr[];
  sessionIndex: string;
  sessionExpiresAt: number;
  now: number;
}

/** What the session's factors say to the SP: two factors, a Kerberos ticket, a password over TLS, or nothing more specific. */
export function authnContextOf(amr: Amr[]): string {
  if (amr.includes('mfa')) return AUTHN_CONTEXT.multiFactor;
  if (amr.includes('wia')) return AUTHN_CONTEXT.kerberos;
  return amr.includes('pwd') ? AUTHN_CONTEXT.password : AUTHN_CONTEXT.unspecified;
}

function assertionXml(f: AssertionFacts): string {
  const until = instant(f.now + ASSERTION_TTL_MS);
  const inResponseTo = f.inResponseTo ? ` InResponseTo="${escapeXml(f.inResponseTo)}"` : '';
  const classRef = authnContextOf(f.amr);
  return (
    `<saml:Assertion xmlns:saml="${NS.assertion}" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ID="${newId()}" Version="2.0" IssueInstant="${instant(f.now)}">` +
    `<saml:Issuer>${escapeXml(f.issuer)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="${NAME_ID_FORMAT_URIS[f.nameIdFormat]}">${escapeXml(f.nameId)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData${inResponseTo} NotOnOrAfter="${until}" Recipient="${escapeXml(f.acsUrl)}"/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${instant(f.now - 60_000)}" NotOnOrAfter="${until}"><saml:AudienceRestriction><saml:Audience>${escapeXml(f.sp.entityId)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${instant(f.authTime)}" SessionIndex="${escapeXml(f.sessionIndex)}" SessionNotOnOrAfter="${instant(f.sessionExpiresAt)}"><saml:AuthnContext><saml:AuthnContextClassRef>${classRef}</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    attributeStatement(f.attributes) +
    `</saml:Assertion>`
  );
}

/** The assertion encrypted to the SP's certificate: AES-256-GCM content, RSA-OAEP key transport (xml-encryption). */
async function encrypted(assertion: string, certificate: string): Promise<string> {
  const publicKey = new X509Certificate(certificate).publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const data = await encrypt(assertion, {
    rsa_pub: publicKey,
    pem: certificate,
    encryptionAlgorithm: 'http://www.w3.org/2009/xmlenc11#aes256-gcm',
    keyEncryptionAlgorithm: 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
    disallowEncryptionWithInsecureAlgorithm: true,
  });
  return `<saml:EncryptedAssertion xmlns:saml="${NS.assertion}">${data}</saml:EncryptedAssertion>`;
}

function responseXml(o: {
  issuer: string;
  destination: string;
  inResponseTo?: string;
  now: number;
  status: string;
  second?: string;
  statusMessage?: string;
  body: string;
}): string {
  const inResponseTo = o.inResponseTo ? ` InResponseTo="${escapeXml(o.inResponseTo)}"` : '';
  const message = o.statusMessage ? `<samlp:StatusMessage>${escapeXml(o.statusMessage)}</samlp:StatusMessage>` : '';
  const code = o.second
    ? `<samlp:StatusCode Value="${STATUS}${o.status}"><samlp:StatusCode Value="${STATUS}${o.second}"/></samlp:StatusCode>`
    : `<samlp:StatusCode Value="${STATUS}${o.status}"/>`;
  return (
    `<samlp:Response xmlns:samlp="${NS.protocol}" xmlns:saml="${NS.assertion}" ID="${newId()}" Version="2.0" IssueInstant="${instant(o.now)}" Destination="${escapeXml(o.destination)}"${inResponseTo}>` +
    `<saml:Issuer>${escapeXml(o.issuer)}</saml:Issuer>` +
    `<samlp:Status>${code}${message}</samlp:Status>` +
    o.body +
    `</samlp:Response>`
  );
}

/**
 * The Response to a sign-on (docs/saml-applications.md): the assertion signed (unless the SP takes a signed response
 * only), then encrypted when the SP asks for it, then the response signed when the SP wants that.
 * Each signature covers the element it sits in, by its ID, and nothing wraps or is added around a
 * signed element afterwards but its envelope.
 */
export async function signOnResponse(f: AssertionFacts, signer: SamlSigner): Promise<string> {
  let assertion = assertionXml(f);
  if (f.sp.signAssertions) assertion = signRoot(assertion, signer);
  if (f.sp.encryptAssertions && f.sp.encryptionCertificate) assertion = await encrypted(assertion, f.sp.encryptionCertificate);
  const response = responseXml({
    issuer: f.issuer,
    destination: f.acsUrl,
    inResponseTo: f.inResponseTo,
    now: f.now,
    status: 'Success',
    body: assertion,
  });
  return f.sp.signResponses ? signRoot(response, signer) : response;
}

/** A Response without an assertion: the request cannot be met (a passive request of a signed-out user). Signed. */
export function failureResponse(
  o: {
    issuer: string;
    destination: string;
    inResponseTo?: string;
    now: number;
    status: 'Responder' | 'Requester';
    second?: string;
    message: string;
  },
  signer: SamlSigner,
): string {
  return signRoot(responseXml({ ...o, statusMessage: o.message, body: '' }), signer);
}
