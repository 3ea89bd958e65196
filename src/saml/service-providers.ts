import { randomUUID, X509Certificate } from 'node:crypto';
import type { Actor, AuditLog } from '../audit/record.ts';
import { checkRedirectUri } from '../clients/service.ts';
import { clock } from '../clock.ts';
import type { Transaction } from '../db/transaction.ts';
import type { AddressRules } from '../outbound/address-rules.ts';
import { urlRefusal } from '../outbound/url-check.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import type { SamlQueries } from './saml-queries.ts';
import { NAME_ID_FORMATS, type NameIdFormat, type ServiceProvider } from './model.ts';
import { readSpMetadata } from './sp-metadata.ts';
import { SamlInputError, toPem } from './xml.ts';
import { EVERYONE } from '../access/model.ts';
import {
  type AccessPolicyInput,
  type AppRoleInput,
  type AttributeMappingInput,
  checkAccess,
  checkAttributeMappings,
  checkAttributeName,
  checkRoles,
  checkRolesAttribute,
} from '../access/validate.ts';
import { checkOwners } from '../admin-roles/owners.ts';

/** The attributes Latchkey can release (docs/saml-applications.md); all of them by default. */
export const SAML_ATTRIBUTES = ['uid', 'mail', 'displayName', 'groups'] as const;

/** The explicit fields of a registration or an update; `undefined` (or null, for the lists and flags) leaves a field as it is. */
export interface ServiceProviderInput {
  entityId?: string | null;
  name?: string | null;
  assertionConsumerServiceUrls?: string[] | null;
  /** null removes it. */
  singleLogoutServiceUrl?: string | null;
  /** Its SOAP SingleLogoutService (docs/saml-applications.md "Single logout by SOAP"); null removes it. */
  singleLogoutSoapUrl?: string | null;
  signingCertificate?: string | null;
  encryptionCertificate?: string | null;
  nameIdFormat?: NameIdFormat | null;
  attributes?: string[] | null;
  signAssertions?: boolean | null;
  signResponses?: boolean | null;
  encryptAssertions?: boolean | null;
  wantAuthnRequestsSigned?: boolean | null;
  allowIdpInitiated?: boolean | null;
  /** Who may use it (docs/access-and-claims.md); null: everyone again. */
  access?: AccessPolicyInput | null;
  /** Its roles (GraphQL `roles`); null: none. */
  appRoles?: readonly AppRoleInput[] | null;
  /** Replaces the fixed attribute set; null: back to it. */
  attributeMappings?: readonly AttributeMappingInput[] | null;
  nameIdAttribute?: string | null;
  rolesAttribute?: string | null;
  /** User ids of its owners (docs/admin-api.md "Roles and permissions"); null: none. */
  owners?: readonly string[] | null;
}

/** The plain fields that null clears (the rest keep their value on null); the access and release fields clear in applicationFields. */
const CLEARABLE = new Set(['singleLogoutServiceUrl', 'singleLogoutSoapUrl', 'signingCertificate', 'encryptionCertificate']);

/** The access and release fields of an input, checked and defaulted (null clears); undefined where the input leaves one out. */
function applicationFields(input: ServiceProviderInput): Partial<ServiceProvider> {
  const out: Partial<ServiceProvider> = {};
  if (input.access !== undefined) out.access = checkAccess('access', input.access);
  if (input.appRoles !== undefined) out.appRoles = checkRoles('roles', input.appRoles);
  if (input.attributeMappings !== undefined) out.attributeMappings = checkAttributeMappings('attributeMappings', input.attributeMappings);
  if (input.nameIdAttribute !== undefined) out.nameIdAttribute = checkAttributeName('nameIdAttribute', input.nameIdAttribute);
  if (input.rolesAttribute !== undefined) out.rolesAttribute = checkRolesAttribute('rolesAttribute', input.rolesAttribute, SAML_ATTRIBUTES);
  return out;
}

function checkCertificate(field: string, pem: string | null): string | null {
  if (pem === null) return null;
  try {
    const normalised = toPem(pem);
    const cert = new X509Certificate(normalised);
    if (cert.publicKey.asymmetricKeyType !== 'rsa') throw new InputError(field, 'must be a certificate for an RSA key');
    return normalised;
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new InputError(field, 'is not an X.509 certificate (PEM or base64 DER)');
  }
}

/**
 * A URL Latchkey POSTs to, server to server: absolute http or https, no fragment, and not in a network
 * it never calls (docs/decisions.md "Outbound fetches"), said now rather than at the first logout.
 */
function checkSoapUrl(field: string, uri: string, outbound: AddressRules): void {
  let url: URL;
  if (uri.length > 2000 || /[\x00-\x20\x7f]/.test(uri))
    throw new InputError(field, 'must be at most 2000 characters, no spaces or control characters');
  try {
    url = new URL(uri);
  } catch {
    throw new InputError(field, `${JSON.stringify(uri)} is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InputError(field, `${uri}: must be http or https`);
  if (url.hash || uri.includes('#')) throw new InputError(field, `${uri} must not have a fragment`);
  const why = urlRefusal(url, outbound);
  if (why) throw new InputError(field, `${uri}: ${why}`);
}

function validate(sp: ServiceProvider, outbound: AddressRules): ServiceProvider {
  if (!sp.entityId || sp.entityId.length > 1024 || /[\x00-\x20\x7f]/.test(sp.entityId))
    throw new InputError('entityId', 'must be 1 to 1024 characters, no spaces or control characters');
  const name = sp.name.trim();
  if (!name || name.length > 200 || /[\x00-\x1f\x7f]/.test(name))
    throw new InputError('name', 'must be 1 to 200 characters, no control characters');
  if (sp.assertionConsumerServiceUrls.length === 0) throw new InputError('assertionConsumerServiceUrls', 'at least one');
  if (sp.assertionConsumerServiceUrls.length > 20) throw new InputError('assertionConsumerServiceUrls', 'at most 20');
  for (const url of sp.assertionConsumerServiceUrls) checkRedirectUri('assertionConsumerServiceUrls', url);
  if (sp.singleLogoutServiceUrl !== null) checkRedirectUri('singleLogoutServiceUrl', sp.singleLogoutServiceUrl);
  if (sp.singleLogoutSoapUrl !== null) checkSoapUrl('singleLogoutSoapUrl', sp.singleLogoutSoapUrl, outbound);
  if (!NAME_ID_FORMATS.includes(sp.nameIdFormat)) throw new InputError('nameIdFormat', `must be one of ${NAME_ID_FORMATS.join(', ')}`);
  for (const a of sp.attributes) {
    if (!(SAML_ATTRIBUTES as readonly string[]).includes(a))
      throw new InputError('attributes', `${JSON.stringify(a)} is not one of ${SAML_ATTRIBUTES.join(', ')}`);
  }
  if (sp.wantAuthnRequestsSigned && !sp.signingCertificate)
    throw new InputError('signingCertificate', 'wantAuthnRequestsSigned needs the SP signing certificate');
  if (sp.encryptAssertions && !sp.encryptionCertificate)
    throw new InputError('encryptionCertificate', 'encryptAssertions needs the SP encryption certificate');
  if (!sp.signAssertions && !sp.signResponses) throw new InputError('signAssertions', 'the assertion or the response must be signed');
  return {
    ...sp,
    name,
    attributes: [...new Set(sp.attributes)],
    signingCertificate: checkCertificate('signingCertificate', sp.signingCertificate),
    encryptionCertificate: checkCertificate('encryptionCertificate', sp.encryptionCertificate),
  };
}

function apply(sp: ServiceProvider, input: ServiceProviderInput): ServiceProvider {
  const { access, appRoles, attributeMappings, nameIdAttribute, rolesAttribute, owners, ...plain } = input;
  const next = {
    ...sp,
    ...applicationFields({ access, appRoles, attributeMappings, nameIdAttribute, rolesAttribute }),
    ...(owners === undefined ? {} : { owners: checkOwners('owners', owners) }),
  } as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(plain)) {
    if (value === undefined || (value === null && !CLEARABLE.has(key))) continue;
    next[key] = value;
  }
  // URLs given explicitly carry no metadata indexes: each one's index is then its position.
  if (input.assertionConsumerServiceUrls) next.acsIndexes = null;
  return next as unknown as ServiceProvider;
}

interface SamlTransaction {
  queries: { saml: SamlQueries };
  audit: Pick<AuditLog, 'change'>;
}

/**
 * SAML service providers (docs/saml-applications.md), the sibling of OAuth clients: registered from their metadata
 * and/or explicit fields, changed and deleted by an administrator, every change audited with it.
 */
export const serviceProviders = (queries: SamlQueries, deps: { transaction: Transaction<SamlTransaction>; outbound: AddressRules }) => ({
  find: queries.findByEntityId,
  findById: queries.findById,
  list: queries.list,

  /** Registers an SP: its metadata first (if given), the explicit fields over it. */
  async register(metadataXml: string | null | undefined, input: ServiceProviderInput, actor: Actor): Promise<ServiceProvider> {
    let fromMetadata = {};
    if (metadataXml) {
      try {
        fromMetadata = readSpMetadata(metadataXml);
      } catch (err) {
        if (err instanceof SamlInputError) throw new InputError('metadataXml', err.message);
        throw err;
      }
    }
    const now = clock.now();
    const base: ServiceProvider = {
      id: randomUUID(),
      entityId: '',
      name: '',
      assertionConsumerServiceUrls: [],
      acsIndexes: null,
      singleLogoutServiceUrl: null,
      singleLogoutSoapUrl: null,
      signingCertificate: null,
      encryptionCertificate: null,
      nameIdFormat: 'persistent',
      attributes: [...SAML_ATTRIBUTES],
      signAssertions: true,
      signResponses: false,
      encryptAssertions: false,
      wantAuthnRequestsSigned: false,
      allowIdpInitiated: false,
      access: EVERYONE,
      appRoles: [],
      attributeMappings: null,
      nameIdAttribute: null,
      rolesAttribute: null,
      owners: [],
      createdAt: now,
      updatedAt: now,
      ...fromMetadata,
    };
    const merged = apply(base, input);
    if (!merged.name) merged.name = merged.entityId;
    const sp = validate(merged, deps.outbound);
    await deps.transaction(async (tx) => {
      if (await tx.queries.saml.findByEntityId(sp.entityId)) throw new InputError('entityId', `${sp.entityId} is registered already`);
      await tx.queries.saml.insert(sp);
      await tx.audit.change('saml_sp.register', actor, {}, { entityId: sp.entityId });
    });
    return sp;
  },

  update(entityId: string, input: ServiceProviderInput, actor: Actor): Promise<ServiceProvider> {
    return deps.transaction(async (tx) => {
      const sp = await tx.queries.saml.findByEntityId(entityId);
      if (!sp) throw new NotFoundError('entityId', `no SAML service provider ${entityId}`);
      const next = validate({ ...apply(sp, input), updatedAt: clock.now() }, deps.outbound);
      if (next.entityId !== sp.entityId && (await tx.queries.saml.findByEntityId(next.entityId)))
        throw new InputError('entityId', `${next.entityId} is registered already`);
      await tx.queries.saml.update(next);
      await tx.audit.change('saml_sp.update', actor, {}, { entityId: sp.entityId });
      return next;
    });
  },

  /** Deletes an SP; what the sessions recorded of it goes with it. */
  remove(entityId: string, actor: Actor): Promise<boolean> {
    return deps.transaction(async (tx) => {
      const removed = await tx.queries.saml.remove(entityId);
      if (removed) await tx.audit.change('saml_sp.delete', actor, {}, { entityId });
      return removed;
    });
  },
});

export type ServiceProviders = ReturnType<typeof serviceProviders>;
