import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import type { User } from '../users/model.ts';
import { writtenDocument } from './documents.ts';
import type { ScimCaller, ScimDocument, ScimUserRecord } from './model.ts';
import { applyPatch, preparePatch, readPatchBody } from './patch.ts';
import { nextUpdate } from './resources.ts';
import { actorOf, callerDetails, type ScimServiceDeps, type ScimTransaction } from './deps.ts';
import { USER_SCHEMAS } from './schemas.ts';
import { userDocument } from './user-document.ts';
import { userFields } from './user-fields.ts';
import {
  attempt,
  type Claim,
  checkTakeover,
  checkUnique,
  claiming,
  emailVerified,
  found,
  hashed,
  LostUpdate,
} from './user-write-checks.ts';

/** The document as stored: `active` is the record's state, never kept in it (a PATCH must not carry an old one). */
const withoutActive = ({ active: _active, ...rest }: ScimDocument): ScimDocument => rest;

/** PUT and PATCH of a User: the new document made whole, then the one write of an existing user. */
export function scimUserUpdate(deps: ScimServiceDeps) {
  const { transaction, queries, base } = deps;

  /**
   * The one write of an existing user (PUT, PATCH), on the row `found` locked: the document stored, the
   * record's fields and state made to match it, the act audited. `active` is acted on only when the
   * request itself set it: absent, the state is left as it is; `true` brings back a user SCIM (or a
   * directory) disabled, never one an administrator disabled. The write goes ahead only on the version
   * read (`updated_at`), so a write another one overtook is tried again, never applied over it.
   */
  async function write(
    tx: ScimTransaction,
    caller: ScimCaller,
    rec: ScimUserRecord,
    document: ScimDocument,
    active: boolean | undefined,
    passwordHash: string | undefined,
    o: { action: string; origin: Origin; claim: Claim; details?: Record<string, unknown> },
  ): Promise<ScimDocument> {
    const fields = userFields(document);
    const before = (await tx.queries.users.find(rec.id))!;
    checkTakeover(before, rec.document, { ...fields, document, password: passwordHash !== undefined });
    const renamed = fields.username.toLowerCase() !== before.username.toLowerCase();
    await checkUnique(tx, caller.backend, rec.id, fields.username, fields.externalId, o.claim, { renamed });
    const actor = actorOf(caller, o.origin);
    if (active === false && !before.disabled) {
      await tx.users.deprovision(rec.id, { backend: caller.backend, reason: 'inactive', origin: o.origin });
    } else if (active === true && before.disabled && before.disabledBy === 'directory') {
      await tx.users.reenable(rec.id, { backend: caller.backend, origin: o.origin });
    }
    const user = (await tx.queries.users.find(rec.id))!;
    const emailChanged = (fields.email ?? '').toLowerCase() !== (before.email ?? '').toLowerCase();
    const next: User = {
      ...user,
      username: fields.username,
      email: fields.email,
      emailVerified: fields.email && emailChanged ? await emailVerified(tx, fields.email, rec.id, deps.upstreams) : user.emailVerified,
      displayName: fields.displayName,
      externalId: fields.externalId ?? user.id,
      attributes: fields.attributes,
      passwordHash: passwordHash ?? user.passwordHash,
      updatedAt: nextUpdate(clock.now(), Math.max(user.updatedAt, rec.updatedAt)),
    };
    if (!(await tx.queries.scim.moveVersion(rec.id, user.updatedAt, next.updatedAt))) throw new LostUpdate();
    await tx.queries.users.update(next);
    // A new password ends every session and token; a reset link mailed to an old address dies (docs/decisions.md).
    if (passwordHash) await tx.sessions.endAllOf(rec.id, { actor });
    if (passwordHash || next.email !== before.email) await tx.queries.resets.discardAllOf(rec.id);
    await tx.queries.scim.setDocument(rec.id, withoutActive(document));
    await tx.audit.change(
      o.action,
      actor,
      { userId: rec.id },
      { ...callerDetails(caller), ...(passwordHash ? { password: true } : {}), ...o.details },
    );
    const after = (await tx.queries.scim.findUser(caller.backend, rec.id))!;
    return userDocument(base, after, await tx.queries.scim.membershipsOfUsers(caller.backend, [rec.id]));
  }

  return {
    async replace(caller: ScimCaller, id: string, body: unknown, o: { ifMatch?: string; origin: Origin }): Promise<ScimDocument> {
      const { document, password } = writtenDocument(USER_SCHEMAS, body);
      userFields(document);
      const passwordHash = await hashed(password);
      const active = typeof document.active === 'boolean' ? document.active : undefined;
      return attempt(() =>
        claiming(queries, caller.backend, (claim) =>
          transaction(async (tx) => {
            const rec = await found(tx, caller, id, o.ifMatch);
            return write(tx, caller, rec, document, active, passwordHash, { action: 'scim.replace_user', origin: o.origin, claim });
          }),
        ),
      );
    },

    async patch(caller: ScimCaller, id: string, body: unknown, o: { ifMatch?: string; origin: Origin }): Promise<ScimDocument> {
      const prepared = preparePatch(USER_SCHEMAS, readPatchBody(body), id);
      const passwordHash = await hashed(prepared.password);
      return attempt(() =>
        claiming(queries, caller.backend, (claim) =>
          transaction(async (tx) => {
            const rec = await found(tx, caller, id, o.ifMatch);
            // Patched without `active`: it is in the result only when an operation of this request set it.
            const patched = applyPatch({ ...withoutActive(rec.document), id: rec.id }, prepared);
            const { document } = writtenDocument(USER_SCHEMAS, patched);
            const active = typeof document.active === 'boolean' ? document.active : undefined;
            return write(tx, caller, rec, document, active, passwordHash, {
              action: 'scim.patch_user',
              origin: o.origin,
              claim,
              details: { operations: prepared.operations.map((op) => `${op.op} ${op.path ?? ''}`.trim()).slice(0, 20) },
            });
          }),
        ),
      );
    },
  };
}
