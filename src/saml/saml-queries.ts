import type { Database } from '../db/database.ts';
import { bool, json, num } from '../db/rows.ts';
import type { NameIdFormat, ServiceProvider, Participant } from './model.ts';
import { EVERYONE, type AccessPolicy, type AppRole, type AttributeMapping } from '../access/model.ts';
import { ownerPattern } from '../admin-roles/model.ts';

type Row = Record<string, unknown>;

const toSp = (r: Row): ServiceProvider => ({
  id: String(r.id),
  entityId: String(r.entity_id),
  name: String(r.name),
  assertionConsumerServiceUrls: json<string[]>(r.acs_urls, []),
  acsIndexes: r.acs_indexes == null ? null : json<number[]>(r.acs_indexes, []),
  singleLogoutServiceUrl: (r.slo_url as string | null) ?? null,
  singleLogoutSoapUrl: (r.slo_soap_url as string | null | undefined) ?? null,
  signingCertificate: (r.signing_cert as string | null) ?? null,
  encryptionCertificate: (r.encryption_cert as string | null) ?? null,
  nameIdFormat: String(r.name_id_format) as NameIdFormat,
  attributes: json<string[]>(r.attributes, []),
  signAssertions: bool(r.sign_assertions),
  signResponses: bool(r.sign_responses),
  encryptAssertions: bool(r.encrypt_assertions),
  wantAuthnRequestsSigned: bool(r.want_authn_requests_signed),
  allowIdpInitiated: bool(r.allow_idp_initiated),
  access: json<AccessPolicy>(r.access, EVERYONE),
  appRoles: json<AppRole[]>(r.app_roles, []),
  attributeMappings: r.attribute_mappings == null ? null : json<AttributeMapping[]>(r.attribute_mappings, []),
  nameIdAttribute: (r.name_id_attribute as string | null | undefined) ?? null,
  rolesAttribute: (r.roles_attribute as string | null | undefined) ?? null,
  owners: json<string[]>(r.owners, []),
  createdAt: num(r.created_at),
  updatedAt: num(r.updated_at),
});

const toRow = (sp: ServiceProvider): Row => ({
  id: sp.id,
  entity_id: sp.entityId,
  name: sp.name,
  acs_urls: JSON.stringify(sp.assertionConsumerServiceUrls),
  acs_indexes: sp.acsIndexes === null ? null : JSON.stringify(sp.acsIndexes),
  slo_url: sp.singleLogoutServiceUrl,
  slo_soap_url: sp.singleLogoutSoapUrl,
  signing_cert: sp.signingCertificate,
  encryption_cert: sp.encryptionCertificate,
  name_id_format: sp.nameIdFormat,
  attributes: JSON.stringify(sp.attributes),
  sign_assertions: sp.signAssertions,
  sign_responses: sp.signResponses,
  encrypt_assertions: sp.encryptAssertions,
  want_authn_requests_signed: sp.wantAuthnRequestsSigned,
  allow_idp_initiated: sp.allowIdpInitiated,
  access: sp.access.mode === 'everyone' ? null : JSON.stringify(sp.access),
  app_roles: sp.appRoles.length > 0 ? JSON.stringify(sp.appRoles) : null,
  attribute_mappings: sp.attributeMappings === null ? null : JSON.stringify(sp.attributeMappings),
  name_id_attribute: sp.nameIdAttribute,
  roles_attribute: sp.rolesAttribute,
  owners: sp.owners.length > 0 ? JSON.stringify(sp.owners) : null,
  created_at: sp.createdAt,
  updated_at: sp.updatedAt,
});

export const samlQueries = ({ knex: db }: Database) => ({
  async findByEntityId(entityId: string): Promise<ServiceProvider | undefined> {
    const row = await db('saml_service_providers').where({ entity_id: entityId }).first();
    return row ? toSp(row) : undefined;
  },

  async findById(id: string): Promise<ServiceProvider | undefined> {
    const row = await db('saml_service_providers').where({ id }).first();
    return row ? toSp(row) : undefined;
  },

  /** Every SP by entity ID, or only those `owner` owns (the `app-owner` role's view). */
  async list(owner?: string): Promise<ServiceProvider[]> {
    const q = db('saml_service_providers').orderBy('entity_id');
    if (owner !== undefined) q.whereRaw("owners like ? escape '\\'", [ownerPattern(owner)]);
    return (await q).map(toSp);
  },

  async insert(sp: ServiceProvider): Promise<void> {
    await db('saml_service_providers').insert(toRow(sp));
  },

  async update(sp: ServiceProvider): Promise<void> {
    const { id: _id, created_at: _c, ...rest } = toRow(sp);
    await db('saml_service_providers').where({ id: sp.id }).update(rest);
  },

  async remove(entityId: string): Promise<boolean> {
    return (await db('saml_service_providers').where({ entity_id: entityId }).delete()) > 0;
  },

  /** Records a request ID; false when it was seen before (a replay). */
  async useRequestId(idHash: string, expiresAt: number): Promise<boolean> {
    const inserted = await db('saml_request_ids')
      .insert({ id_hash: idHash, expires_at: expiresAt })
      .onConflict('id_hash')
      .ignore()
      .returning('id_hash');
    return inserted.length > 0;
  },

  /** The service provider got an assertion in the session (again: the newest NameID and expiry win). */
  async addParticipant(sessionId: string, p: Participant, expiresAt: number): Promise<void> {
    await db('saml_session_participants')
      .insert({ session_id: sessionId, sp_id: p.spId, name_id: p.nameId, name_id_format: p.nameIdFormat, expires_at: expiresAt })
      .onConflict(['session_id', 'sp_id'])
      .merge(['name_id', 'name_id_format', 'expires_at']);
  },

  async participants(sessionId: string): Promise<Participant[]> {
    const rows = await db('saml_session_participants').where({ session_id: sessionId });
    return rows.map((r: Row) => ({
      spId: String(r.sp_id),
      nameId: String(r.name_id),
      nameIdFormat: String(r.name_id_format) as NameIdFormat,
    }));
  },

  /** Some of the session's participants, taken: each is told once (the rest are told by SOAP as the session ends). */
  async removeParticipants(sessionId: string, spIds: string[]): Promise<void> {
    if (spIds.length === 0) return;
    await db('saml_session_participants').where({ session_id: sessionId }).whereIn('sp_id', spIds).delete();
  },
});

export type SamlQueries = ReturnType<typeof samlQueries>;
