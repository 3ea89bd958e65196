/**
 * The schemas the SCIM endpoint serves and checks documents against (RFC 7643 §4, §7 and §8.7.1):
 * the core User, the enterprise User extension and the Group, written as data. `/Schemas` serves
 * them as they are; the document rules (src/scim/documents.ts) read mutability, types and
 * multiplicity from here. docs/scim-provisioning.md "What the endpoint supports".
 */
import { SCIM_SCHEMAS } from './model.ts';

export type AttributeType = 'string' | 'boolean' | 'decimal' | 'integer' | 'dateTime' | 'reference' | 'complex' | 'binary';
export type Mutability = 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
export type Returned = 'always' | 'never' | 'default' | 'request';

export interface AttributeDefinition {
  name: string;
  type: AttributeType;
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: Mutability;
  returned: Returned;
  uniqueness: 'none' | 'server' | 'global';
  subAttributes?: AttributeDefinition[];
  canonicalValues?: string[];
  referenceTypes?: string[];
}

export interface SchemaDefinition {
  id: string;
  name: string;
  description: string;
  attributes: AttributeDefinition[];
}

type Options = Partial<Omit<AttributeDefinition, 'name' | 'type' | 'description'>>;

const attribute = (name: string, type: AttributeType, description: string, o: Options = {}): AttributeDefinition => ({
  name,
  type,
  multiValued: false,
  description,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...o,
});

const text = (name: string, description: string, o: Options = {}) => attribute(name, 'string', description, o);
const complex = (name: string, description: string, subAttributes: AttributeDefinition[], o: Options = {}) =>
  attribute(name, 'complex', description, { subAttributes, ...o });

/** The sub-attributes of a multi-valued attribute such as `emails` (RFC 7643 §2.4), `value` typed as given. */
const multiValue = (name: string, description: string, types: string[], value: AttributeDefinition = text('value', `The ${name} value.`)) =>
  complex(
    name,
    description,
    [
      value,
      text('display', 'A human-readable name, primarily used for display purposes.'),
      text('type', "A label indicating the attribute's function.", { canonicalValues: types }),
      attribute('primary', 'boolean', 'Whether this is the preferred value.'),
    ],
    { multiValued: true },
  );

/** `id`, `externalId` and `meta`: on every resource (RFC 7643 §3.1); listed for filters and projection, not in `/Schemas`. */
export const COMMON_ATTRIBUTES: AttributeDefinition[] = [
  text('id', "The service provider's unique and stable identifier of the resource.", {
    caseExact: true,
    mutability: 'readOnly',
    returned: 'always',
    uniqueness: 'server',
  }),
  text('externalId', 'The identifier of the resource in the provisioning client.', { caseExact: true }),
  complex(
    'meta',
    'Resource metadata.',
    [
      text('resourceType', 'The name of the resource type.', { mutability: 'readOnly', caseExact: true }),
      attribute('created', 'dateTime', 'When the resource was added.', { mutability: 'readOnly' }),
      attribute('lastModified', 'dateTime', 'When the resource was last changed.', { mutability: 'readOnly' }),
      attribute('location', 'reference', 'The URI of the resource.', { mutability: 'readOnly', caseExact: true, referenceTypes: ['uri'] }),
      text('version', 'The weak ETag of the resource.', { mutability: 'readOnly', caseExact: true }),
    ],
    { mutability: 'readOnly' },
  ),
];

const userSchema: SchemaDefinition = {
  id: SCIM_SCHEMAS.user,
  name: 'User',
  description: 'User Account',
  attributes: [
    text('userName', 'Unique identifier for the User, used to sign in; unique without case within its backend.', {
      required: true,
      uniqueness: 'server',
    }),
    complex('name', "The components of the user's real name.", [
      text('formatted', 'The full name, formatted for display.'),
      text('familyName', 'The family name.'),
      text('givenName', 'The given name.'),
      text('middleName', 'The middle name(s).'),
      text('honorificPrefix', 'The honorific prefix(es).'),
      text('honorificSuffix', 'The honorific suffix(es).'),
    ]),
    text('displayName', 'The name of the User, suitable for display to end-users.'),
    text('nickName', 'The casual way to address the user.'),
    attribute('profileUrl', 'reference', "A URI of the user's online profile.", { referenceTypes: ['external'] }),
    text('title', 'The user\'s title, such as "Vice President".'),
    text('userType', 'The relationship between the organization and the user.'),
    text('preferredLanguage', "The user's preferred written or spoken language (RFC 7231 Accept-Language)."),
    text('locale', "The user's default location for localizing (language-COUNTRY)."),
    text('timezone', "The user's time zone in the IANA Time Zone database format."),
    attribute('active', 'boolean', "The user's administrative status: false deprovisions the user."),
    text('password', "The user's clear text password: write-only, hashed, never returned.", {
      mutability: 'writeOnly',
      returned: 'never',
    }),
    multiValue('emails', 'Email addresses for the user.', ['work', 'home', 'other']),
    multiValue('phoneNumbers', 'Phone numbers for the User.', ['work', 'home', 'mobile', 'fax', 'pager', 'other']),
    multiValue('ims', 'Instant messaging addresses for the User.', ['aim', 'gtalk', 'icq', 'xmpp', 'msn', 'skype', 'qq', 'yahoo']),
    multiValue(
      'photos',
      'URLs of photos of the User.',
      ['photo', 'thumbnail'],
      attribute('value', 'reference', 'The URL of a photo of the User.', { referenceTypes: ['external'] }),
    ),
    complex(
      'addresses',
      'A physical mailing address for this User.',
      [
        text('formatted', 'The full mailing address, formatted for display.'),
        text('streetAddress', 'The full street address component.'),
        text('locality', 'The city or locality component.'),
        text('region', 'The state or region component.'),
        text('postalCode', 'The zip code or postal code component.'),
        text('country', 'The country name component.'),
        text('type', "A label indicating the address's function.", { canonicalValues: ['work', 'home', 'other'] }),
        attribute('primary', 'boolean', 'Whether this is the preferred mailing address.'),
      ],
      { multiValued: true },
    ),
    complex(
      'groups',
      'The groups the user belongs to: changed through the Group resources only.',
      [
        text('value', 'The identifier of the group.', { mutability: 'readOnly', caseExact: true }),
        attribute('$ref', 'reference', 'The URI of the group.', { mutability: 'readOnly', referenceTypes: ['Group'] }),
        text('display', "The group's displayName.", { mutability: 'readOnly' }),
        text('type', 'How the membership came about.', { mutability: 'readOnly', canonicalValues: ['direct', 'indirect'] }),
      ],
      { multiValued: true, mutability: 'readOnly' },
    ),
    multiValue('entitlements', 'A list of entitlements for the User.', []),
    multiValue('roles', 'A list of roles for the User.', []),
    multiValue(
      'x509Certificates',
      'A list of certificates issued to the User.',
      [],
      attribute('value', 'binary', 'A DER certificate, base64.'),
    ),
  ],
};

const enterpriseUserSchema: SchemaDefinition = {
  id: SCIM_SCHEMAS.enterpriseUser,
  name: 'EnterpriseUser',
  description: 'Enterprise User',
  attributes: [
    text('employeeNumber', 'A string identifier, typically numeric or alphanumeric, assigned to a person.'),
    text('costCenter', 'The name of a cost center.'),
    text('organization', 'The name of an organization.'),
    text('division', 'The name of a division.'),
    text('department', 'The name of a department.'),
    complex('manager', "The user's manager.", [
      text('value', 'The id of the SCIM resource representing the manager.', { caseExact: true }),
      attribute('$ref', 'reference', 'The URI of the SCIM resource representing the manager.', { referenceTypes: ['User'] }),
      text('displayName', "The displayName of the user's manager.", { mutability: 'readOnly' }),
    ]),
  ],
};

const groupSchema: SchemaDefinition = {
  id: SCIM_SCHEMAS.group,
  name: 'Group',
  description: 'Group',
  attributes: [
    text('displayName', 'A human-readable name for the Group; unique without case within its backend.', {
      required: true,
      uniqueness: 'server',
    }),
    complex(
      'members',
      'The members of the Group: users of the same backend.',
      [
        text('value', 'The id of a member.', { mutability: 'immutable', caseExact: true }),
        attribute('$ref', 'reference', 'The URI of a member.', { mutability: 'immutable', referenceTypes: ['User'] }),
        text('display', "The member's displayName.", { mutability: 'readOnly' }),
        text('type', 'The type of the member.', { mutability: 'immutable', canonicalValues: ['User'] }),
      ],
      { multiValued: true },
    ),
  ],
};

export const SCHEMAS: readonly SchemaDefinition[] = [userSchema, enterpriseUserSchema, groupSchema];

/** A resource type's schemas: the core one, and its extensions by URN. */
export interface ResourceSchemas {
  name: 'User' | 'Group';
  endpoint: '/Users' | '/Groups';
  core: SchemaDefinition;
  extensions: SchemaDefinition[];
}

export const USER_SCHEMAS: ResourceSchemas = { name: 'User', endpoint: '/Users', core: userSchema, extensions: [enterpriseUserSchema] };
export const GROUP_SCHEMAS: ResourceSchemas = { name: 'Group', endpoint: '/Groups', core: groupSchema, extensions: [] };
