/**
 * SCIM Users (RFC 7644 §3.3–3.6): the users of one backend of plugin `scim`, kept as Latchkey user
 * records (docs/scim-provisioning.md "What the endpoint supports"). Every write is one transaction
 * with its `admin.change` event naming the SCIM token or client; `active: false` and DELETE
 * deprovision the user exactly as a directory leaver (docs/directory-sync.md).
 */
import { randomUUID } from 'node:crypto';
import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import { hashPassword } from '../crypto/passwords.ts';
import { InputError } from '../errors/service.ts';
import type { User } from '../users/model.ts';
import { checkPassword } from '../users/service.ts';
import { project, writtenDocument, type Projection } from './documents.ts';
import { ScimError, scimErrors } from './errors.ts';
import { matches, parseFilter, type Narrowing } from './filters.ts';
import {
  SCIM_SCHEMAS,
  type ScimCaller,
  type ScimDocument,
  type ScimListPage,
  type ScimListRequest,
  type ScimMembership,
  type ScimUserRecord,
  type SqlNarrowing,
} from './model.ts';
import { applyPatch, preparePatch, readPatchBody } from './patch.ts';
import { checkIfMatch, meta, nextUpdate, pageOf } from './resources.ts';
import { actorOf, callerDetails, type ScimServiceDeps, type ScimTransaction } from './deps.ts';
import { USER_SCHEMAS } from './schemas.ts';
import { userFields } from './user-fields.ts';

/** The userName and externalId a write is about to hold, for the 409 of a lost race. */
interface Claim {
  id?: string;
  username?: string;
  externalId?: string | null;
}

/** The SQL narrowing of a user list: userName, externalId, id and displayName are columns. */
const sqlNarrowing = (n: Narrowing | undefined): SqlNarrowing | undefined =>
  n && { column: n.attribute === 'userName' ? 'username' : n.attribute, value: n.value };

export function scimUsers(deps: ScimServiceDeps) {
  const { transaction, queries, base } = deps;
  const location = (id: string) => `${base}/Users/${id}`;

  function render(rec: ScimUserRecord, memberships: readonly ScimMembership[]): ScimDocument {
    const { schemas, id: _id, meta: _meta, groups: _groups, active: _active, ...rest } = rec.document;
    const groups = memberships
      .filter((m) => m.userId === rec.id)
      .map((m) => ({ value: m.groupId, $ref: `${base}/Groups/${m.groupId}`, display: m.groupName, type: 'direct' }));
    const enterprise = rest[SCIM_SCHEMAS.enterpriseUser] as Record<string, unknown> | undefined;
    const manager = enterprise?.manager as Record<string, unknown> | undefined;
    if (manager && typeof manager.value === 'string' && manager.$ref === undefined) {
      rest[SCIM_SCHEMAS.enterpriseUser] = { ...enterprise, manager: { ...manager, $ref: location(manager.value) } };
    }
    return {
      schemas: Array.isArray(schemas) ? schemas : [SCIM_SCHEMAS.user],
      id: rec.id,
      ...rest,
      active: !rec.disabled,
      ...(groups.length > 0 ? { groups } : {}),
      meta: meta('User', location(rec.id), rec.createdAt, rec.updatedAt),
    };
  }

  async function shown(rec: ScimUserRecord): Promise<ScimDocument> {
    return render(rec, await queries.membershipsOfUsers(rec.backend, [rec.id]));
  }

  /** A new password by SCIM: the rules of every database password; hashed before any transaction. */
  async function hashed(password: string | undefined): Promise<string | undefined> {
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
  async function checkUnique(tx: ScimTransaction, backend: string, id: string, username: string, externalId: string | null, claim?: Claim) {
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
  async function claiming<T>(backend: string, work: (claim: Claim) => Promise<T>): Promise<T> {
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

  async function found(tx: ScimTransaction, caller: ScimCaller, id: string, ifMatch?: string): Promise<ScimUserRecord> {
    const rec = await tx.queries.scim.findUser(caller.backend, id);
    if (!rec) throw scimErrors.notFound(`no User ${id}`);
    checkIfMatch(ifMatch, rec.updatedAt);
    return rec;
  }

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
    return render(after, await tx.queries.scim.membershipsOfUsers(caller.backend, [rec.id]));
  }

  return {
    async get(caller: ScimCaller, id: string, p: Projection = {}): Promise<ScimDocument> {
      const rec = await queries.findUser(caller.backend, id);
      if (!rec) throw scimErrors.notFound(`no User ${id}`);
      return project(USER_SCHEMAS, await shown(rec), p);
    },

    async list(caller: ScimCaller, req: ScimListRequest & Projection): Promise<ScimListPage> {
      const { backend } = caller;
      if (!req.filter) {
        const totalResults = await queries.countUsers(backend);
        const page = req.count === 0 ? [] : await queries.users(backend, { offset: req.startIndex - 1, limit: req.count });
        const memberships =
          page.length > 0
            ? await queries.membershipsOfUsers(
                backend,
                page.map((u) => u.id),
              )
            : [];
        return { totalResults, startIndex: req.startIndex, resources: page.map((u) => project(USER_SCHEMAS, render(u, memberships), req)) };
      }
      const { filter, narrowing } = parseFilter(USER_SCHEMAS, req.filter);
      const candidates = await queries.users(backend, { narrowing: sqlNarrowing(narrowing) });
      const memberships =
        candidates.length === 0 ? [] : await queries.membershipsOfUsers(backend, narrowing ? candidates.map((u) => u.id) : undefined);
      const matched = candidates.map((u) => render(u, memberships)).filter((doc) => matches(filter, doc));
      const page = pageOf(matched, req);
      return { ...page, resources: page.resources.map((d) => project(USER_SCHEMAS, d, req)) };
    },

    async create(caller: ScimCaller, body: unknown, origin: Origin): Promise<ScimDocument> {
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
        // A SCIM client is the organisation's own directory: its addresses are as good as an administrator's.
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
      const created = await claiming(caller.backend, (claim) =>
        transaction(async (tx) => {
          await checkUnique(tx, caller.backend, id, user.username, fields.externalId, claim);
          await tx.queries.users.insert(user);
          if (user.email) await tx.queries.users.demoteClaimedEmail(user.email, id, deps.upstreams);
          await tx.queries.scim.setDocument(id, document);
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
      if (active && user.email && !passwordHash && deps.invite && deps.invites(caller.backend)) {
        // The user exists whatever becomes of the mail; the invitation's own service records its outcome.
        await deps.invite(user, origin).catch((err: unknown) => {
          deps.logger.error({ err, userId: id, requestId: origin.requestId }, 'SCIM invitation not sent');
        });
      }
      return render(created, []);
    },

    async replace(caller: ScimCaller, id: string, body: unknown, o: { ifMatch?: string; origin: Origin }): Promise<ScimDocument> {
      const { document, password } = writtenDocument(USER_SCHEMAS, body);
      userFields(document);
      const passwordHash = await hashed(password);
      return claiming(caller.backend, (claim) =>
        transaction(async (tx) => {
          const rec = await found(tx, caller, id, o.ifMatch);
          return write(tx, caller, rec, document, passwordHash, { action: 'scim.replace_user', origin: o.origin, claim });
        }),
      );
    },

    async patch(caller: ScimCaller, id: string, body: unknown, o: { ifMatch?: string; origin: Origin }): Promise<ScimDocument> {
      const prepared = preparePatch(USER_SCHEMAS, readPatchBody(body), id);
      const passwordHash = await hashed(prepared.password);
      return claiming(caller.backend, (claim) =>
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

    /**
     * DELETE: the user is deprovisioned (reason `deleted`) and leaves SCIM's view: GET answers 404
     * and the userName is free for a new POST. The record stays, renamed and disabled, for the audit trail.
     */
    async remove(caller: ScimCaller, id: string, o: { ifMatch?: string; origin: Origin }): Promise<void> {
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
    },
  };
}

export type ScimUsers = ReturnType<typeof scimUsers>;
