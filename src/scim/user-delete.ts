import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import type { ScimCaller } from './model.ts';
import { nextUpdate } from './resources.ts';
import { actorOf, callerDetails, type ScimServiceDeps } from './deps.ts';
import { found } from './user-write-checks.ts';

/**
 * DELETE of a User: the user is deprovisioned (reason `deleted`) and leaves SCIM's view: GET answers
 * 404 and the userName is free for a new POST. The record stays, renamed and disabled, for the audit trail.
 */
export function scimUserDelete({ transaction }: Pick<ScimServiceDeps, 'transaction'>) {
  return async function remove(caller: ScimCaller, id: string, o: { ifMatch?: string; origin: Origin }): Promise<void> {
    await transaction(async (tx) => {
      const rec = await found(tx, caller, id, o.ifMatch);
      const before = (await tx.queries.users.find(id))!;
      if (!before.disabled) await tx.users.deprovision(id, { backend: caller.backend, reason: 'deleted', origin: o.origin });
      const user = (await tx.queries.users.find(id))!;
      const now = clock.now();
      await tx.queries.scim.leaveAllGroups(id, now);
      await tx.queries.users.update({
        ...user,
        username: `${user.username.slice(0, 255 - id.length - 1)}~${id}`,
        externalId: id,
        groups: [],
        disabled: true,
        disabledBy: user.disabledBy ?? 'directory',
        updatedAt: nextUpdate(now, Math.max(user.updatedAt, rec.updatedAt)),
      });
      await tx.queries.scim.setDocument(id, null);
      await tx.audit.change(
        'scim.delete_user',
        actorOf(caller, o.origin),
        { userId: id },
        { ...callerDetails(caller), userName: rec.userName },
      );
    });
  };
}
