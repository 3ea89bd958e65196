import { SCIM_SCHEMAS, type ScimDocument, type ScimMembership, type ScimUserRecord } from './model.ts';
import { meta } from './resources.ts';

/**
 * A user record as SCIM shows it (RFC 7643 §4.1): the stored document, with the state, the groups
 * the user is a member of and `meta`, every reference absolute under `base` (`/scim/v2`).
 */
export function userDocument(base: string, rec: ScimUserRecord, memberships: readonly ScimMembership[]): ScimDocument {
  const location = (id: string) => `${base}/Users/${id}`;
  const { schemas, id: _id, meta: _meta, groups: _groups, active: _active, ...rest } = rec.document;
  const groups = memberships
    .filter((m) => m.userId === rec.id)
    .map((m) => ({ value: m.groupId, $ref: `${base}/Groups/${m.groupId}`, display: m.groupName, type: 'direct' }));
  const enterprise = rest[SCIM_SCHEMAS.enterpriseUser] as Record<string, unknown> | undefined;
  const manager = enterprise?.manager as Record<string, unknown> | undefined;
  if (manager && typeof manager.value === 'string' && manager.$ref === undefined) {
    rest[SCIM_SCHEMAS.enterpriseUser] = { ...enterprise, manager: { ...manager, $ref: location(manager.value) } };
  }
  return {
    schemas: Array.isArray(schemas) ? schemas : [SCIM_SCHEMAS.user],
    id: rec.id,
    ...rest,
    active: !rec.disabled,
    ...(groups.length > 0 ? { groups } : {}),
    meta: meta('User', location(rec.id), rec.createdAt, rec.updatedAt),
  };
}
