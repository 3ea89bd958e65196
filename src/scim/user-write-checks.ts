import { hashPassword } from '../crypto/passwords.ts';
import { InputError } from '../errors/service.ts';
import { checkPassword } from '../users/service.ts';
import { ScimError, scimErrors } from './errors.ts';
import type { User } from '../users/model.ts';
import type { ScimCaller, ScimDocument, ScimUserRecord } from './model.ts';
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

/**
 * 409 when another record of the backend holds the userName (without case) or the externalId; and,
 * for a new user or a new name (`renamed`), when a user of another backend holds the name: a name is
 * one person's across the chain, which signs in the first backend holding it. The detail names no
 * other user (docs/scim-provisioning.md "What the endpoint supports").
 */
export async function checkUnique(
  tx: ScimTransaction,
  backend: string,
  id: string,
  username: string,
  externalId: string | null,
  claim?: Claim,
  o: { renamed?: boolean } = {},
) {
  if (claim) Object.assign(claim, { id, username, externalId });
  const holder = await tx.queries.users.findByUsername(backend, username);
  if (holder && holder.id !== id) throw scimErrors.conflict(`userName "${username}" is taken in this backend`);
  if (o.renamed && (await tx.queries.scim.nameHeldElsewhere(backend, username))) {
    throw scimErrors.conflict(`userName "${username}" is taken by an account of another backend here`);
  }
  if (externalId !== null) {
    const other = await tx.queries.users.findByExternalId(backend, externalId);
    if (other && other.id !== id) throw scimErrors.conflict(`externalId "${externalId}" is taken in this backend`);
  }
}

/**
 * Whether a SCIM user's address is stored verified (docs/decisions.md "Upstream emails"): the
 * upstream accounts that held it verified keep it unverified from now on, as for an administrator's
 * address; but another account (a database, directory or SCIM user) holding it verified keeps it, and
 * the SCIM user's is stored unverified, so no application is told two accounts own one address.
 */
export async function emailVerified(tx: ScimTransaction, email: string, id: string, upstreams: readonly string[]): Promise<boolean> {
  await tx.queries.users.demoteClaimedEmail(email, id, upstreams);
  return !(await tx.queries.users.holdsVerifiedEmail(email, id));
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

/** Another write changed what this one read before holding it (the row, the user's groups): the transaction is tried again. */
export class LostUpdate extends Error {}

/** How often a write that lost an update is tried again before the client is told to send it again. */
const ATTEMPTS = 3;

/** The write's transaction, tried again when another write overtook it. */
export async function attempt<T>(work: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await work();
    } catch (err) {
      if (!(err instanceof LostUpdate)) throw err;
      if (i >= ATTEMPTS) throw new ScimError(409, undefined, 'the user was changed by another request meanwhile; send this one again');
    }
  }
}

/**
 * The user a write is about, its row held until the commit (two writes of one user run one after the
 * other): 404 when the backend has none, 412 when `If-Match` names another version.
 */
export async function found(tx: ScimTransaction, caller: ScimCaller, id: string, ifMatch?: string): Promise<ScimUserRecord> {
  const rec = await tx.queries.scim.findUser(caller.backend, id, { lock: true });
  if (!rec) throw scimErrors.notFound(`no User ${id}`);
  checkIfMatch(ifMatch, rec.updatedAt);
  return rec;
}

/** The email addresses of a document, without case: what a write would change of where the user is mailed or matched. */
const emailsOf = (doc: ScimDocument): string[] =>
  [
    ...new Set(
      (Array.isArray(doc.emails) ? (doc.emails as Array<{ value?: unknown }>) : [])
        .map((e) => (typeof e?.value === 'string' ? e.value.trim().toLowerCase() : ''))
        .filter(Boolean),
    ),
  ].sort();

/**
 * The admin API's rule that whoever acts on a user holds every permission of theirs
 * (docs/scim-provisioning.md "What a SCIM token is trusted with"), as it applies to a SCIM client, which holds none: a user an
 * administrator gave an admin role keeps their password, userName and emails against it, since
 * any of them hands the account over (a password; a mailed reset link; an upstream name that links).
 * Deprovisioning and the other attributes stay the client's, as a directory's.
 */
export function checkTakeover(
  user: Pick<User, 'id' | 'roles' | 'username' | 'email'>,
  before: ScimDocument,
  after: { username: string; email: string | null; document: ScimDocument; password: boolean },
): void {
  if (user.roles.length === 0) return;
  const changed: string[] = [];
  if (after.password) changed.push('password');
  if (after.username.toLowerCase() !== user.username.toLowerCase()) changed.push('userName');
  if (
    (after.email ?? '').toLowerCase() !== (user.email ?? '').toLowerCase() ||
    emailsOf(after.document).join('\n') !== emailsOf(before).join('\n')
  ) {
    changed.push('emails');
  }
  if (changed.length === 0) return;
  throw scimErrors.forbidden(
    `User ${user.id} holds an admin role given here: a SCIM client may not change their ${changed.join(', ')}, only an administrator may ` +
      "(deprovisioning and other attributes stay the client's)",
  );
}
