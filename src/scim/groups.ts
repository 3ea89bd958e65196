/**
 * SCIM Groups (RFC 7644 §3.3–3.6): groups of one backend's SCIM users. A member's `users.groups`
 * carries the names of their SCIM groups, rewritten whenever a membership or a group's name
 * changes, so access policies and claim mappings (docs/access-and-claims.md) see SCIM groups as they
 * see a directory's (docs/scim-provisioning.md "What the endpoint supports").
 */
import { randomUUID } from 'node:crypto';
import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import { project, writtenDocument, type Projection } from './documents.ts';
import { ScimError, scimErrors } from './errors.ts';
import { matches, parseFilter } from './filters.ts';
import { SCIM_SCHEMAS, type ScimCaller, type ScimDocument, type ScimGroup, type ScimListPage, type ScimListRequest } from './model.ts';
import { applyPatch, preparePatch, readPatchBody } from './patch.ts';
import { checkIfMatch, meta, nextUpdate, pageOf } from './resources.ts';
import type { ScimQueries } from './scim-queries.ts';
import { GROUP_SCHEMAS } from './schemas.ts';
import { actorOf, callerDetails, type ScimServiceDeps, type ScimTransaction } from './deps.ts';

/** The displayName a write is about to hold, for the 409 of a lost race. */
interface Claim {
  id?: string;
  displayName?: string;
}

type Member = { groupId: string; userId: string; userName: string; displayName: string | null };

/** The most members one write may name (a body holds at most the router's size limit anyway). */
const MAX_MEMBERS = 50_000;

export function scimGroups(deps: ScimServiceDeps) {
  const { transaction, queries, base } = deps;
  const location = (id: string) => `${base}/Groups/${id}`;

  function render(g: ScimGroup, members: readonly Member[]): ScimDocument {
    const own = members.filter((m) => m.groupId === g.id);
    return {
      schemas: [SCIM_SCHEMAS.group],
      id: g.id,
      ...(g.externalId !== null ? { externalId: g.externalId } : {}),
      displayName: g.displayName,
      ...(own.length > 0
        ? {
            members: own.map((m) => ({
              value: m.userId,
              $ref: `${base}/Users/${m.userId}`,
              display: m.displayName ?? m.userName,
              type: 'User',
            })),
          }
        : {}),
      meta: meta('Group', location(g.id), g.createdAt, g.updatedAt),
    };
  }

  /** Members are not read when the client excluded them (Entra ID lists groups with `excludedAttributes=members`). */
  const wantsMembers = (p: Projection) =>
    !p.excludedAttributes?.some((a) => a.trim().toLowerCase() === 'members') &&
    (!p.attributes?.length || p.attributes.some((a) => a.trim().toLowerCase().startsWith('members')));

  /** The member ids a written document names: users of the caller's backend, else 400 invalidValue. */
  async function memberIds(q: ScimQueries, caller: ScimCaller, doc: ScimDocument): Promise<string[]> {
    const listed = Array.isArray(doc.members) ? (doc.members as Array<{ value?: unknown }>) : [];
    const ids = [...new Set(listed.map((m) => m.value).filter((v): v is string => typeof v === 'string'))];
    if (ids.length !== listed.length && listed.some((m) => typeof m.value !== 'string')) {
      throw scimErrors.badRequest('invalidValue', 'members: every member needs a "value", the id of a User');
    }
    if (ids.length > MAX_MEMBERS) throw scimErrors.badRequest('invalidValue', `members: at most ${MAX_MEMBERS} in one request`);
    const known = new Set((await q.usersAmong(caller.backend, ids)).map((u) => u.id));
    const unknown = ids.filter((id) => !known.has(id));
    if (unknown.length > 0) {
      throw scimErrors.badRequest(
        'invalidValue',
        `members: no User ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ', …' : ''} in this backend`,
      );
    }
    return ids;
  }

  /** Each user's `groups` column made the names of their SCIM groups again. */
  async function rewriteGroupsOf(tx: ScimTransaction, backend: string, userIds: readonly string[]): Promise<void> {
    if (userIds.length === 0) return;
    const memberships = await tx.queries.scim.membershipsOfUsers(backend, userIds);
    const now = clock.now();
    for (const userId of new Set(userIds)) {
      const names = memberships.filter((m) => m.userId === userId).map((m) => m.groupName);
      await tx.queries.scim.setUserGroups(
        userId,
        names.sort((a, b) => a.localeCompare(b)),
        now,
      );
    }
  }

  async function checkName(tx: ScimTransaction, backend: string, displayName: string, id: string, claim?: Claim): Promise<void> {
    if (claim) Object.assign(claim, { id, displayName });
    const holder = await tx.queries.scim.findGroupByName(backend, displayName);
    if (holder && holder.id !== id) throw scimErrors.conflict(`displayName "${displayName}" is taken in this backend`);
  }

  const textOf = (v: unknown, what: string, max: number): string | null => {
    if (v === undefined || v === null) return null;
    const s = String(v).trim();
    if (s.length > max || /[\x00-\x1f\x7f]/.test(s))
      throw scimErrors.badRequest('invalidValue', `${what}: at most ${max} characters, no control characters`);
    return s || null;
  };

  /** A group's name and externalId as written; the name is required. */
  function groupFields(doc: ScimDocument): { displayName: string; externalId: string | null } {
    const displayName = textOf(doc.displayName, 'displayName', 256);
    if (!displayName) throw scimErrors.badRequest('invalidValue', 'displayName: is required');
    return { displayName, externalId: textOf(doc.externalId, 'externalId', 256) };
  }

  /** The one write of an existing group (PUT, PATCH): name, externalId and members as the document says. */
  async function write(
    tx: ScimTransaction,
    caller: ScimCaller,
    g: ScimGroup,
    doc: ScimDocument,
    o: { action: string; origin: Origin; claim: Claim },
  ): Promise<ScimDocument> {
    const fields = groupFields(doc);
    await checkName(tx, caller.backend, fields.displayName, g.id, o.claim);
    const wanted = new Set(await memberIds(tx.queries.scim, caller, doc));
    const current = new Set(await tx.queries.scim.memberIds(g.id));
    const added = [...wanted].filter((id) => !current.has(id));
    const removed = [...current].filter((id) => !wanted.has(id));
    const next: ScimGroup = { ...g, ...fields, updatedAt: nextUpdate(clock.now(), g.updatedAt) };
    await tx.queries.scim.updateGroup(next);
    await tx.queries.scim.addMembers(g.id, added);
    await tx.queries.scim.removeMembers(g.id, removed);
    // A new name is every member's new group name; else only the members who came or went changed.
    const renamed = next.displayName !== g.displayName;
    await rewriteGroupsOf(tx, caller.backend, renamed ? [...new Set([...wanted, ...removed])] : [...added, ...removed]);
    await tx.audit.change(
      o.action,
      actorOf(caller, o.origin),
      {},
      {
        ...callerDetails(caller),
        group: g.id,
        displayName: next.displayName,
        ...(renamed ? { renamedFrom: g.displayName } : {}),
        added: added.length,
        removed: removed.length,
      },
    );
    return render(next, await tx.queries.scim.membersOfGroups([g.id]));
  }

  /** A write that lost a race for a displayName (the unique index refused it) is 409 as if it had come second. */
  async function claiming<T>(backend: string, work: (claim: Claim) => Promise<T>): Promise<T> {
    const claim: Claim = {};
    try {
      return await work(claim);
    } catch (err) {
      if (err instanceof ScimError || claim.id === undefined) throw err;
      const holder = await queries.findGroupByName(backend, claim.displayName!).catch(() => undefined);
      if (!holder || holder.id === claim.id) throw err;
      throw scimErrors.conflict(`displayName "${claim.displayName}" is taken in this backend`);
    }
  }

  async function found(tx: ScimTransaction, caller: ScimCaller, id: string, ifMatch?: string): Promise<ScimGroup> {
    const g = await tx.queries.scim.findGroup(caller.backend, id);
    if (!g) throw scimErrors.notFound(`no Group ${id}`);
    checkIfMatch(ifMatch, g.updatedAt);
    return g;
  }

  return {
    async get(caller: ScimCaller, id: string, p: Projection = {}): Promise<ScimDocument> {
      const g = await queries.findGroup(caller.backend, id);
      if (!g) throw scimErrors.notFound(`no Group ${id}`);
      return project(GROUP_SCHEMAS, render(g, wantsMembers(p) ? await queries.membersOfGroups([id]) : []), p);
    },

    async list(caller: ScimCaller, req: ScimListRequest & Projection): Promise<ScimListPage> {
      const { backend } = caller;
      const withMembers = async (groups: ScimGroup[], needed: boolean) =>
        needed && groups.length > 0 ? queries.membersOfGroups(groups.map((g) => g.id)) : [];
      if (!req.filter) {
        const totalResults = await queries.countGroups(backend);
        const page = req.count === 0 ? [] : await queries.groups(backend, { offset: req.startIndex - 1, limit: req.count });
        const members = await withMembers(page, wantsMembers(req));
        return { totalResults, startIndex: req.startIndex, resources: page.map((g) => project(GROUP_SCHEMAS, render(g, members), req)) };
      }
      const { filter, narrowing } = parseFilter(GROUP_SCHEMAS, req.filter);
      const candidates = await queries.groups(backend, {
        narrowing: narrowing && narrowing.attribute !== 'userName' ? { column: narrowing.attribute, value: narrowing.value } : undefined,
      });
      // Members are read when the filter or the answer needs them.
      const members = await withMembers(candidates, wantsMembers(req) || /members/i.test(req.filter));
      const matched = candidates.map((g) => render(g, members)).filter((doc) => matches(filter, doc));
      const page = pageOf(matched, req);
      return { ...page, resources: page.resources.map((d) => project(GROUP_SCHEMAS, d, req)) };
    },

    async create(caller: ScimCaller, body: unknown, origin: Origin): Promise<ScimDocument> {
      const { document } = writtenDocument(GROUP_SCHEMAS, body);
      const fields = groupFields(document);
      const now = clock.now();
      const g: ScimGroup = { id: randomUUID(), backend: caller.backend, ...fields, createdAt: now, updatedAt: now };
      return claiming(caller.backend, (claim) =>
        transaction(async (tx) => {
          await checkName(tx, caller.backend, g.displayName, g.id, claim);
          const ids = await memberIds(tx.queries.scim, caller, document);
          await tx.queries.scim.insertGroup(g);
          await tx.queries.scim.addMembers(g.id, ids);
          await rewriteGroupsOf(tx, caller.backend, ids);
          await tx.audit.change(
            'scim.create_group',
            actorOf(caller, origin),
            {},
            {
              ...callerDetails(caller),
              group: g.id,
              displayName: g.displayName,
              added: ids.length,
            },
          );
          return render(g, await tx.queries.scim.membersOfGroups([g.id]));
        }),
      );
    },

    async replace(caller: ScimCaller, id: string, body: unknown, o: { ifMatch?: string; origin: Origin }): Promise<ScimDocument> {
      const { document } = writtenDocument(GROUP_SCHEMAS, body);
      groupFields(document);
      return claiming(caller.backend, (claim) =>
        transaction(async (tx) =>
          write(tx, caller, await found(tx, caller, id, o.ifMatch), document, { action: 'scim.replace_group', origin: o.origin, claim }),
        ),
      );
    },

    async patch(caller: ScimCaller, id: string, body: unknown, o: { ifMatch?: string; origin: Origin }): Promise<ScimDocument> {
      const prepared = preparePatch(GROUP_SCHEMAS, readPatchBody(body), id);
      return claiming(caller.backend, (claim) =>
        transaction(async (tx) => {
          const g = await found(tx, caller, id, o.ifMatch);
          const members = (await tx.queries.scim.memberIds(id)).map((value) => ({ value }));
          const base: ScimDocument = { schemas: [SCIM_SCHEMAS.group], id, displayName: g.displayName, members };
          if (g.externalId !== null) base.externalId = g.externalId;
          const { document } = writtenDocument(GROUP_SCHEMAS, applyPatch(base, prepared));
          return write(tx, caller, g, document, { action: 'scim.patch_group', origin: o.origin, claim });
        }),
      );
    },

    async remove(caller: ScimCaller, id: string, o: { ifMatch?: string; origin: Origin }): Promise<void> {
      await transaction(async (tx) => {
        const g = await found(tx, caller, id, o.ifMatch);
        const members = await tx.queries.scim.memberIds(id);
        await tx.queries.scim.deleteGroup(id);
        await rewriteGroupsOf(tx, caller.backend, members);
        await tx.audit.change(
          'scim.delete_group',
          actorOf(caller, o.origin),
          {},
          {
            ...callerDetails(caller),
            group: id,
            displayName: g.displayName,
            removed: members.length,
          },
        );
      });
    },
  };
}

export type ScimGroups = ReturnType<typeof scimGroups>;
