/** What an application's tabs share (docs/access-and-claims.md): the application of either kind, its save, the words of its errors. */
import { request } from '../api/graphql.ts';
import {
  type AccessPolicyInput,
  type ApplicationRoleInput,
  type AttributeMappingInput,
  type ClaimMappingInput,
  type ClientApplicationFieldsFragment,
  type SamlNameIdFormat,
  type SamlSpFieldsFragment,
  UpdateClientApplicationMutation,
  UpdateSamlServiceProviderMutation,
} from '../api/generated.ts';
import type { Option } from '../ui/pickers.tsx';

/** What the tabs edit, whichever kind of application it is. */
export type Application =
  | { kind: 'client'; id: string; name: string; client: ClientApplicationFieldsFragment }
  | { kind: 'saml'; id: string; name: string; sp: SamlSpFieldsFragment };

export const ofClient = (client: ClientApplicationFieldsFragment): Application => ({
  kind: 'client',
  id: client.clientId,
  name: client.name,
  client,
});
export const ofSp = (sp: SamlSpFieldsFragment): Application => ({ kind: 'saml', id: sp.entityId, name: sp.name, sp });

/** The user ids of its owners, who may change it with apps:owned. */
export const ownersOf = (app: Application) => (app.kind === 'client' ? app.client.owners : app.sp.owners);
export const accessOf = (app: Application) => (app.kind === 'client' ? app.client.access : app.sp.access);
export const rolesOf = (app: Application) => (app.kind === 'client' ? app.client.applicationRoles : app.sp.roles);
/** The API's name of the roles: a client's own `roles` are another thing (docs/decisions.md). */
export const rolesField = (app: Application) => (app.kind === 'client' ? 'applicationRoles' : 'roles');

/** A change of the tabs' fields; what a kind of application lacks is never sent. */
export interface ApplicationChange {
  access?: AccessPolicyInput;
  roles?: ApplicationRoleInput[];
  claimMappings?: ClaimMappingInput[];
  attributeMappings?: AttributeMappingInput[] | null;
  nameIdFormat?: SamlNameIdFormat;
  nameIdAttribute?: string | null;
  rolesAttribute?: string | null;
}

/** Saves a change through updateClient or updateSamlServiceProvider; the answer is the application as stored. */
export async function saveApplication(app: Application, change: ApplicationChange): Promise<Application> {
  if (app.kind === 'client') {
    const { roles, access, claimMappings } = change;
    const input = { access, claimMappings, ...(roles ? { applicationRoles: roles } : {}) };
    return ofClient((await request(UpdateClientApplicationMutation, { clientId: app.id, input })).updateClient);
  }
  const { claimMappings: _none, ...input } = change;
  return ofSp((await request(UpdateSamlServiceProviderMutation, { entityId: app.id, input })).updateSamlServiceProvider);
}

/** Field names of an API error, in the words of the tabs: `claimMappings.0.claim` is "Claim 1: claim name". */
const PARTS: Record<string, string> = {
  mode: 'who may use it',
  groups: 'groups',
  users: 'users',
  backends: 'backends',
  name: 'name',
  claim: 'claim name',
  source: 'source',
  attribute: 'attribute',
  value: 'value',
  groupFilter: 'group filter',
  multiValued: 'several values',
  scope: 'scope',
  targets: 'sent in',
  nameFormat: 'name format',
  friendlyName: 'friendly name',
};
const LISTS: Record<string, string> = {
  access: 'Access',
  applicationRoles: 'Role',
  roles: 'Role',
  claimMappings: 'Claim',
  attributeMappings: 'Attribute',
  nameIdAttribute: 'NameID attribute',
  rolesAttribute: 'Roles attribute name',
  nameIdFormat: 'NameID format',
};
export function fieldLabels(field: string | undefined): Record<string, string> {
  if (!field) return {};
  const [list = '', index, part] = field.split('.');
  const head = LISTS[list] ?? list;
  const label =
    index === undefined
      ? head
      : /^\d+$/.test(index)
        ? `${head} ${Number(index) + 1}${part ? `: ${PARTS[part] ?? part}` : ''}`
        : `${head}: ${PARTS[index] ?? index}`;
  return { [field]: label };
}

/** After a failed save, the first field the error marks takes the focus. */
export const focusInvalid = (panel: string) =>
  setTimeout(() => (document.querySelector(`#${panel} [aria-invalid="true"]`) as HTMLElement | null)?.focus());

/** What the Access, Claims and Attributes tabs hand their preview. */
export interface PreviewState {
  user: Option | undefined;
  onUser: (user: Option) => void;
  version: number;
}
