/**
 * What a SCIM User document means for the Latchkey user record (docs/scim-provisioning.md "What the
 * endpoint supports"): the username, the email, the display name, and the attributes that access
 * policies and claim mappings read (docs/access-and-claims.md), flattened under plain names.
 */
import { scimErrors } from './errors.ts';
import { SCIM_SCHEMAS, type ScimDocument } from './model.ts';

export interface UserFields {
  username: string;
  email: string | null;
  displayName: string | null;
  /** The SCIM `externalId`: the client's key of the user. */
  externalId: string | null;
  attributes: Record<string, string | string[]>;
}

/** The bounds of a user's attributes (docs/access-and-claims.md): values are cut to them, never refused. */
const LIMITS = { value: 2048, values: 200 } as const;

type Entry = { value?: unknown; type?: unknown; primary?: unknown };

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, LIMITS.value) : undefined);
const entries = (v: unknown): Entry[] => (Array.isArray(v) ? (v as Entry[]) : []);
const object = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

/** The address a user is mailed at: the primary one, else the work one, else the first. */
function chosenEmail(emails: Entry[]): string | null {
  const pick = emails.find((e) => e.primary === true) ?? emails.find((e) => String(e.type).toLowerCase() === 'work') ?? emails[0];
  const email = str(pick?.value);
  if (email === undefined) return null;
  if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) {
    throw scimErrors.badRequest('invalidValue', `emails: ${JSON.stringify(email)} is not an email address`);
  }
  return email;
}

/**
 * The attribute names (docs/scim-provisioning.md "What the endpoint supports"): the core User's
 * `givenName`, `familyName`, `middleName`, `nickName`, `title`, `userType`, `preferredLanguage`,
 * `locale`, `timezone`, `externalId`; the enterprise extension's `employeeNumber`, `costCenter`,
 * `organization`, `division`, `department` and `manager` (the manager's id); and the lists
 * `emails` and `phoneNumbers` (their values).
 */
function flattened(doc: ScimDocument): Record<string, string | string[]> {
  const name = object(doc.name);
  const enterprise = object(doc[SCIM_SCHEMAS.enterpriseUser]);
  const out: Record<string, string | string[]> = {};
  const put = (key: string, v: unknown) => {
    const s = str(v);
    if (s !== undefined) out[key] = s;
  };
  put('givenName', name.givenName);
  put('familyName', name.familyName);
  put('middleName', name.middleName);
  for (const key of ['nickName', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone', 'externalId']) put(key, doc[key]);
  for (const key of ['employeeNumber', 'costCenter', 'organization', 'division', 'department']) put(key, enterprise[key]);
  put('manager', object(enterprise.manager).value);
  for (const key of ['emails', 'phoneNumbers']) {
    const values = entries(doc[key])
      .map((e) => str(e.value))
      .filter((v): v is string => v !== undefined)
      .slice(0, LIMITS.values);
    if (values.length > 0) out[key] = values;
  }
  return out;
}

const CONTROL = /[\x00-\x1f\x7f]/g;

export function userFields(doc: ScimDocument): UserFields {
  const username = typeof doc.userName === 'string' ? doc.userName.trim() : '';
  if (!/^[^\s\x00-\x1f]{1,255}$/.test(username)) {
    throw scimErrors.badRequest('invalidValue', 'userName: must be 1 to 255 characters, no spaces');
  }
  const name = object(doc.name);
  const joined = [str(name.givenName), str(name.familyName)].filter(Boolean).join(' ');
  const display = str(doc.displayName) ?? str(name.formatted) ?? (joined || undefined);
  const externalId = str(doc.externalId) ?? null;
  if (externalId !== null && externalId.length > 200) throw scimErrors.badRequest('invalidValue', 'externalId: at most 200 characters');
  return {
    username,
    email: chosenEmail(entries(doc.emails)),
    displayName: display === undefined ? null : display.replace(CONTROL, ' ').slice(0, 255),
    externalId,
    attributes: flattened(doc),
  };
}
