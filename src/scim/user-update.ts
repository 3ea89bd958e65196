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
import { type Claim, checkUnique, claiming, found, hashed } from './user-write-checks.ts';

/** PUT and PATCH of a User: the new document made whole, then the one write of an existing user. */
export function scimUserUpdate(deps: ScimServiceDeps) {
  const { transaction, queries, base } = deps;

  /**
   * The one write of an existing user (PUT, PATCH): the document stored, the record's fields and
   * state made to match it, the act audited. `active` absent leaves the state as it is; `active:
   * true` brings back a user SCIM (or a directory) disabled, never one an administrator disabled.
   */
  async function write(
    tx: ScimTransaction,
    caller: ScimCaller,
    rec: ScimUserRecord,
    document: ScimDocument,
    passwordHash: string | undefined,
    o: { action: string; origin: Origin; claim: Claim; details?: Record<string, unknown> },
  ): Promise<ScimDocument> {
    const fields = userFields(document);
    await checkUnique(tx, caller.backend, rec.id, fields.username, fields.externalId, o.claim);
    const actor = actorOf(caller, o.origin);
    const before = (await tx.queries.users.find(rec.id))!;
    if (document.active === false && !before.disabled) {
      await tx.users.deprovision(rec.id, { backend: caller.backend, reason: 'inactive', origin: o.origin });
    } else if (document.active === true && before.disabled && before.disabledBy === 'directory') {
      await tx.users.reenable(rec.id, { backend: caller.backend, origin: o.origin });
    }
    const user = (await tx.queries.users.find(rec.id))!;
    const next: User = {
      ...user,
      username: fields.username,
      email: fields.email,
      displayName: fields.displayName,
      externalId: fields.externalId ?? user.id,
      attributes: fields.attributes,
      passwordHash: passwordHash ?? user.passwordHash,
      updatedAt: nextUpdate(clock.now(), Math.max(user.updatedAt, rec.updatedAt)),
    };
    await tx.queries.users.update(next);
    if (next.email && next.email !== before.email) await tx.queries.users.demoteClaimedEmail(next.email, next.id, deps.upstreams);
    // A new password ends every session and token; a reset link mailed to an old address dies (docs/decisions.md).
    if (passwordHash) await tx.sessions.endAllOf(rec.id, { actor });
    if (passwordHash || next.email !== before.email) await tx.queries.resets.discardAllOf(rec.id);
    await tx.queries.scim.setDocument(rec.id, document);
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
      return claiming(queries, caller.backend, (claim) =>
        transaction(async (tx) => {
          const rec = await found(tx, caller, id, o.ifMatch);
          return write(tx, caller, rec, document, passwordHash, { action: 'scim.replace_user', origin: o.origin, claim });
        }),
      );
    },

    async patch(caller: ScimCaller, id: string, body: unknown, o: { ifMatch?: string; origin: Origin }): Promise<ScimDocument> {
      const prepared = preparePatch(USER_SCHEMAS, readPatchBody(body), id);
      const passwordHash = await hashed(prepared.password);
      return claiming(queries, caller.backend, (claim) =>
        transaction(async (tx) => {
          const rec = await found(tx, caller, id, o.ifMatch);
          const patched = applyPatch({ ...rec.document, id: rec.id, active: !rec.disabled }, prepared);
          const { document } = writtenDocument(USER_SCHEMAS, patched);
          return write(tx, caller, rec, document, passwordHash, {
            action: 'scim.patch_user',
            origin: o.origin,
            claim,
            details: { operations: prepared.operations.map((op) => `${op.op} ${op.path ?? ''}`.trim()).slice(0, 20) },
          });
        }),
      );
    },
  };
}
