import { hashPassword } from '../crypto/passwords.ts';
import { InputError } from '../errors/service.ts';
import { checkPassword } from '../users/service.ts';
import { ScimError, scimErrors } from './errors.ts';
import type { ScimCaller, ScimUserRecord } from './model.ts';
import { checkIfMatch } from './resources.ts';
import type { ScimQueries } from './scim-queries.ts';
import type { ScimTransaction } from './deps.ts';

/** The userName and externalId a write is about to hold, for the 409 of a lost race. */
export interface Claim {
  id?: string;
  username?: string;
  externalId?: string | null;
}

/** A new password by SCIM: the rules of every database password; hashed before any transaction. */
export async function hashed(password: string | undefined): Promise<string | undefined> {
  if (password === undefined) return undefined;
  try {
    checkPassword(password);
  } catch (err) {
    if (err instanceof InputError) throw scimErrors.badRequest('invalidValue', err.message);
    throw err;
  }
  return hashPassword(password);
}

/** 409 when another record of the backend holds the userName (without case) or the externalId. */
export async function checkUnique(
  tx: ScimTransaction,
  backend: string,
  id: string,
  username: string,
  externalId: string | null,
  claim?: Claim,
) {
  if (claim) Object.assign(claim, { id, username, externalId });
  const holder = await tx.queries.users.findByUsername(backend, username);
  if (holder && holder.id !== id) throw scimErrors.conflict(`userName "${username}" is taken in this backend`);
  if (externalId !== null) {
    const other = await tx.queries.users.findByExternalId(backend, externalId);
    if (other && other.id !== id) throw scimErrors.conflict(`externalId "${externalId}" is taken in this backend`);
  }
}

/**
 * A write that lost a race for a userName or externalId (two requests at once, the unique index
 * refusing the second's insert) is 409 as if it had come second, not 500.
 */
export async function claiming<T>(queries: ScimQueries, backend: string, work: (claim: Claim) => Promise<T>): Promise<T> {
  const claim: Claim = {};
  try {
    return await work(claim);
  } catch (err) {
    if (err instanceof ScimError || claim.id === undefined) throw err;
    const which = await queries.holder(backend, claim.id, claim.username!, claim.externalId ?? null).catch(() => undefined);
    if (!which) throw err;
    throw scimErrors.conflict(`${which} "${which === 'userName' ? claim.username : claim.externalId}" is taken in this backend`);
  }
}

/** The user a write is about: 404 when the backend has none, 412 when `If-Match` names another version. */
export async function found(tx: ScimTransaction, caller: ScimCaller, id: string, ifMatch?: string): Promise<ScimUserRecord> {
  const rec = await tx.queries.scim.findUser(caller.backend, id);
  if (!rec) throw scimErrors.notFound(`no User ${id}`);
  checkIfMatch(ifMatch, rec.updatedAt);
  return rec;
}
