import { createRequire } from 'node:module';

/**
 * The XML libraries SAML uses, loaded at the first SAML message rather than at every start: together
 * with what they pull in (xpath, the xmldom parser) about 30 ms of a process's start-up, for a
 * protocol many deployments never turn on. `require` keeps the callers synchronous; all three are
 * CommonJS packages.
 */
const require = createRequire(import.meta.url);

let xmldom: typeof import('@xmldom/xmldom') | undefined;
let xmlCrypto: typeof import('xml-crypto') | undefined;
let xmlEncryption: typeof import('xml-encryption') | undefined;

export const DomParser = () => (xmldom ??= require('@xmldom/xmldom') as typeof import('@xmldom/xmldom')).DOMParser;
export const SignedXml = () => (xmlCrypto ??= require('xml-crypto') as typeof import('xml-crypto')).SignedXml;
export const xmlenc = () => (xmlEncryption ??= require('xml-encryption') as typeof import('xml-encryption'));
