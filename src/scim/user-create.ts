import { randomUUID } from 'node:crypto';
import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import type { User } from '../users/model.ts';
import { writtenDocument } from './documents.ts';
import type { ScimCaller, ScimDocument } from './model.ts';
import { actorOf, callerDetails, type ScimServiceDeps } from './deps.ts';
import { USER_SCHEMAS } from './schemas.ts';
import { userDocument } from './user-document.ts';
import { userFields } from './user-fields.ts';
import { checkUnique, claiming, emailVerified, hashed } from './user-write-checks.ts';

/**
 * POST of a User: a Latchkey user record of the caller's backend, active unless the document says
 * `active: false`; one with an email and no password is mailed an invitation when the backend invites.
 */
export function scimUserCreate(deps: ScimServiceDeps) {
  const { transaction, queries, base } = deps;
  return async function create(caller: ScimCaller, body: unknown, origin: Origin): Promise<ScimDocument> {
    const { document, password } = writtenDocument(USER_SCHEMAS, body);
    const fields = userFields(document);
    const passwordHash = await hashed(password);
    const id = randomUUID();
    const now = clock.now();
    const active = document.active !== false;
    const user: User = {
      id,
      backend: caller.backend,
      externalId: fields.externalId ?? id,
      username: fields.username,
      email: fields.email,
      // A SCIM client is the organisation's own directory: its addresses are as good as an
      // administrator's, unless another account holds the address verified (set in the transaction).
      emailVerified: true,
      displayName: fields.displayName,
      passwordHash: passwordHash ?? null,
      roles: [],
      groups: [],
      attributes: fields.attributes,
      disabled: !active,
      disabledBy: active ? null : 'directory',
      createdAt: now,
      updatedAt: now,
    };
    const invite = active && !!user.email && !passwordHash && !!deps.invite && deps.invites(caller.backend);
    const created = await claiming(queries, caller.backend, (claim) =>
      transaction(async (tx) => {
        await checkUnique(tx, caller.backend, id, user.username, fields.externalId, claim, { renamed: true });
        if (user.email) user.emailVerified = await emailVerified(tx, user.email, id, deps.upstreams);
        await tx.queries.users.insert(user);
        await tx.queries.scim.setDocument(id, document);
        // Queued with the user: a restart before it is mailed loses nothing (src/scim/invitations.ts).
        if (invite) await tx.queries.scim.queueInvitation(id, origin, now);
        await tx.audit.change(
          'scim.create_user',
          actorOf(caller, origin),
          { userId: id },
          {
            ...callerDetails(caller),
            ...(passwordHash ? { password: true } : {}),
          },
        );
        return (await tx.queries.scim.findUser(caller.backend, id))!;
      }),
    );
    if (invite) deps.invitations.kick();
    return userDocument(base, created, []);
  };
}
