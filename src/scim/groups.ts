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
import { applyPatch, applySetOperations, preparePatch, readPatchBody, SET_LIMITS } from './patch.ts';
import { checkCandidates, checkIfMatch, MAX_CANDIDATES, meta, nextUpdate } from './resources.ts';
import { GROUP_SCHEMAS } from './schemas.ts';
import { actorOf, callerDetails, type ScimServiceDeps, type ScimTransaction } from './deps.ts';

/** The displayName a write is about to hold, for the 409 of a lost race. */
interface Claim {
  id?: string;
  displayName?: string;
}

type Member = { groupId: string; userId: string; userName: string; displayName: string | null };

/** The most members one write may name (a body holds at most the router's size limit anyway). */
const MAX_MEMBERS = SET_LIMITS.values;

/** The most memberships a filter naming `members` is evaluated over (docs/scim-provisioning.md "What the endpoint supports"). */
const MAX_MEMBER_ROWS = 200_000;

export function scimGroups(deps: ScimServiceDeps) {
  const { transaction, queries, base } = deps;
  const location = (id: string) => `${base}/Groups/${id}`;

  /** The group as SCIM shows it; `members` are read by group once per answer (a list renders thousands of groups). */
  function render(g: ScimGroup, members: readonly Member[] | ReadonlyMap<string, readonly Member[]>): ScimDocument {
    const own: readonly Member[] = Array.isArray(members)
      ? (members as readonly Member[]).filter((m) => m.groupId === g.id)
      : ((members as ReadonlyMap<string, readonly Member[]>).get(g.id) ?? []);
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

  /** The member ids a written document names (PUT, POST), each once; at most MAX_MEMBERS. */
  function listedIds(doc: ScimDocument): string[] {
    const listed = Array.isArray(doc.members) ? (doc.members as Array<{ value?: unknown }>) : [];
    const ids = [...new Set(listed.map((m) => m.value).filter((v): v is string => typeof v === 'string'))];
    if (ids.length !== listed.length && listed.some((m) => typeof m.value !== 'string')) {
      throw scimErrors.badRequest('invalidValue', 'members: every member needs a "value", the id of a User');
    }
    if (ids.length > MAX_MEMBERS) throw scimErrors.badRequest('tooMany', `members: at most ${MAX_MEMBERS} in one request`);
    return ids;
  }

  /**
   * Holds the users a group write changes, after its group (src/scim/scim-queries.ts lockGroups), so
   * that a user's DELETE and the group's write take turns. Those who join must be users of the
   * caller's backend, still: else 400 invalidValue.
   */
  async function lockMembers(
    tx: ScimTransaction,
    caller: ScimCaller,
    changed: readonly string[],
    joining: readonly string[],
  ): Promise<void> {
    const live = await tx.queries.scim.lockUsers(caller.backend, changed);
    const unknown = joining.filter((id) => !live.has(id));
    if (unknown.length > 0) {
      throw scimErrors.badRequest(
        'invalidValue',
        `members: no User ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ', …' : ''} in this backend`,
      );
    }
  }

  /** Each user's `groups` column made the names of their SCIM groups again. */
  async function rewriteGroupsOf(tx: ScimTransaction, backend: string, userIds: readonly string[]): Promise<void> {
    if (userIds.length === 0) return;
    const memberships = await tx.queries.scim.membershipsOfUsers(backend, userIds);
    const byUser = new Map<string, string[]>();
    for (const m of memberships) byUser.set(m.userId, [...(byUser.get(m.userId) ?? []), m.groupName]);
    const now = clock.now();
    for (const userId of new Set(userIds)) {
      const names = byUser.get(userId) ?? [];
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

  /**
   * The one write of an existing group (PUT, PATCH): name, externalId and members as the document says,
   * or, from a PATCH, as `members` (the member ids after its set operations). Only the members who join
   * are checked to be users of the backend.
   */
  async function write(
    tx: ScimTransaction,
    caller: ScimCaller,
    g: ScimGroup,
    doc: ScimDocument,
    o: { action: string; origin: Origin; claim: Claim; members?: readonly string[]; current?: readonly string[] },
  ): Promise<ScimDocument> {
    const fields = groupFields(doc);
    await checkName(tx, caller.backend, fields.displayName, g.id, o.claim);
    const wanted = new Set(o.members ?? listedIds(doc));
    const current = new Set(o.current ?? (await tx.queries.scim.memberIds(g.id)));
    const added = [...wanted].filter((id) => !current.has(id));
    const removed = [...current].filter((id) => !wanted.has(id));
    const next: ScimGroup = { ...g, ...fields, updatedAt: nextUpdate(clock.now(), g.updatedAt) };
    await tx.queries.scim.updateGroup(next);
    // A new name is every member's new group name; else only the members who came or went changed.
    const renamed = next.displayName !== g.displayName;
    const changed = renamed ? [...new Set([...wanted, ...removed])] : [...added, ...removed];
    await lockMembers(tx, caller, changed, added);
    await tx.queries.scim.addMembers(g.id, added);
    await tx.queries.scim.removeMembers(g.id, removed);
    await rewriteGroupsOf(tx, caller.backend, changed);
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

  /** The group a write is about, its row held until the commit, before any user's (src/scim/scim-queries.ts lockGroups). */
  async function found(tx: ScimTransaction, caller: ScimCaller, id: string, ifMatch?: string): Promise<ScimGroup> {
    const g = await tx.queries.scim.findGroup(caller.backend, id, { lock: true });
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
      const withMembers = async (groups: ScimGroup[], needed: boolean): Promise<Map<string, Member[]>> => {
        const byGroup = new Map<string, Member[]>();
        if (!needed || groups.length === 0) return byGroup;
        for (const m of await queries.membersOfGroups(groups.map((g) => g.id))) {
          const list = byGroup.get(m.groupId);
          if (list) list.push(m);
          else byGroup.set(m.groupId, [m]);
        }
        return byGroup;
      };
      if (!req.filter) {
        const totalResults = await queries.countGroups(backend);
        // Past the end (startIndex=1e300 too) is an empty page, asked of nobody.
        const page =
          req.count === 0 || req.startIndex > totalResults
            ? []
            : await queries.groups(backend, { offset: req.startIndex - 1, limit: req.count });
        const members = await withMembers(page, wantsMembers(req));
        return { totalResults, startIndex: req.startIndex, resources: page.map((g) => project(GROUP_SCHEMAS, render(g, members), req)) };
      }
      const { filter, narrowing } = parseFilter(GROUP_SCHEMAS, req.filter);
      const sql = narrowing && {
        column: narrowing.attribute === 'userName' ? ('username' as const) : narrowing.attribute,
        value: narrowing.value,
      };
      checkCandidates(await queries.countGroups(backend, sql), 'groups');
      const candidates = await queries.groups(backend, { narrowing: sql, limit: MAX_CANDIDATES });
      // The members are read for the filter only when it names them, within bounds; else for the page alone.
      const filterReadsMembers = /members/i.test(req.filter);
      if (filterReadsMembers && (await queries.countMembersOfGroups(candidates.map((g) => g.id))) > MAX_MEMBER_ROWS) {
        throw scimErrors.badRequest(
          'tooMany',
          `the filter would be evaluated over more than ${MAX_MEMBER_ROWS} members: narrow it with an eq on displayName, externalId or id`,
        );
      }
      const forFilter = await withMembers(candidates, filterReadsMembers);
      const matched = candidates.filter((g) => matches(filter, render(g, forFilter)));
      const start = req.startIndex - 1;
      const page = req.count === 0 ? [] : matched.slice(start, start + req.count);
      const members = filterReadsMembers ? forFilter : await withMembers(page, wantsMembers(req));
      return {
        totalResults: matched.length,
        startIndex: req.startIndex,
        resources: page.map((g) => project(GROUP_SCHEMAS, render(g, members), req)),
      };
    },

    async create(caller: ScimCaller, body: unknown, origin: Origin): Promise<ScimDocument> {
      const { document } = writtenDocument(GROUP_SCHEMAS, body);
      const fields = groupFields(document);
      const now = clock.now();
      const g: ScimGroup = { id: randomUUID(), backend: caller.backend, ...fields, createdAt: now, updatedAt: now };
      return claiming(caller.backend, (claim) =>
        transaction(async (tx) => {
          await checkName(tx, caller.backend, g.displayName, g.id, claim);
          const ids = listedIds(document);
          await tx.queries.scim.insertGroup(g);
          await lockMembers(tx, caller, ids, ids);
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
      // Members change as a set of ids (src/scim/patch.ts), never through the library: thousands named cost thousands of steps.
      const prepared = preparePatch(GROUP_SCHEMAS, readPatchBody(body), id, { sets: ['members'] });
      return claiming(caller.backend, (claim) =>
        transaction(async (tx) => {
          const g = await found(tx, caller, id, o.ifMatch);
          const current = await tx.queries.scim.memberIds(id);
          const members = applySetOperations(current, prepared.sets);
          const base: ScimDocument = { schemas: [SCIM_SCHEMAS.group], id, displayName: g.displayName };
          if (g.externalId !== null) base.externalId = g.externalId;
          const { document } = writtenDocument(GROUP_SCHEMAS, applyPatch(base, prepared));
          return write(tx, caller, g, document, { action: 'scim.patch_group', origin: o.origin, claim, members, current });
        }),
      );
    },

    async remove(caller: ScimCaller, id: string, o: { ifMatch?: string; origin: Origin }): Promise<void> {
      await transaction(async (tx) => {
        const g = await found(tx, caller, id, o.ifMatch);
        const members = await tx.queries.scim.memberIds(id);
        await lockMembers(tx, caller, members, []);
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
