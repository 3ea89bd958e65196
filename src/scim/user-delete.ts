import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import type { ScimCaller } from './model.ts';
import { nextUpdate } from './resources.ts';
import { actorOf, callerDetails, type ScimServiceDeps } from './deps.ts';
import { attempt, found, LostUpdate } from './user-write-checks.ts';

/**
 * DELETE of a User: the user is deprovisioned (reason `deleted`) and leaves SCIM's view: GET answers
 * 404 and the userName is free for a new POST. The record stays, renamed and disabled, for the audit trail.
 */
export function scimUserDelete({ transaction }: Pick<ScimServiceDeps, 'transaction'>) {
  return async function remove(caller: ScimCaller, id: string, o: { ifMatch?: string; origin: Origin }): Promise<void> {
    // The groups the user was seen in: a try that found the user joined another holds that one too next time.
    const groups = new Set<string>();
    await attempt(() =>
      transaction(async (tx) => {
        // Its groups before the user, as every SCIM write takes them (src/scim/scim-queries.ts lockGroups).
        for (const g of await tx.queries.scim.groupIdsOf(id)) groups.add(g);
        await tx.queries.scim.lockGroups([...groups]);
        const rec = await found(tx, caller, id, o.ifMatch);
        // A group that took the user in between is not held: start again (none can now, the user's row is held).
        const joined = (await tx.queries.scim.groupIdsOf(id)).filter((g) => !groups.has(g));
        for (const g of joined) groups.add(g);
        if (joined.length > 0) throw new LostUpdate();
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
      }),
    );
  };
}
