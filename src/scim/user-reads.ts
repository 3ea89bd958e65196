import { project, type Projection } from './documents.ts';
import { scimErrors } from './errors.ts';
import { matches, parseFilter, type Narrowing } from './filters.ts';
import type { ScimCaller, ScimDocument, ScimListPage, ScimListRequest, SqlNarrowing } from './model.ts';
import { checkCandidates, MAX_CANDIDATES, pageOf } from './resources.ts';
import type { ScimServiceDeps } from './deps.ts';
import { USER_SCHEMAS } from './schemas.ts';
import { userDocument } from './user-document.ts';

/** The SQL narrowing of a user list: userName, externalId, id and displayName are columns. */
const sqlNarrowing = (n: Narrowing | undefined): SqlNarrowing | undefined =>
  n && { column: n.attribute === 'userName' ? 'username' : n.attribute, value: n.value };

/** GET of one User, and the list of a backend's Users: a page, or those a filter matches (RFC 7644 §3.4). */
export function scimUserReads({ queries, base }: Pick<ScimServiceDeps, 'queries' | 'base'>) {
  return {
    async get(caller: ScimCaller, id: string, p: Projection = {}): Promise<ScimDocument> {
      const rec = await queries.findUser(caller.backend, id);
      if (!rec) throw scimErrors.notFound(`no User ${id}`);
      return project(USER_SCHEMAS, userDocument(base, rec, await queries.membershipsOfUsers(rec.backend, [rec.id])), p);
    },

    async list(caller: ScimCaller, req: ScimListRequest & Projection): Promise<ScimListPage> {
      const { backend } = caller;
      if (!req.filter) {
        const totalResults = await queries.countUsers(backend);
        // Past the end (startIndex=1e300 too) is an empty page, asked of nobody.
        const page =
          req.count === 0 || req.startIndex > totalResults
            ? []
            : await queries.users(backend, { offset: req.startIndex - 1, limit: req.count });
        const memberships =
          page.length > 0
            ? await queries.membershipsOfUsers(
                backend,
                page.map((u) => u.id),
              )
            : [];
        return {
          totalResults,
          startIndex: req.startIndex,
          resources: page.map((u) => project(USER_SCHEMAS, userDocument(base, u, memberships), req)),
        };
      }
      const { filter, narrowing } = parseFilter(USER_SCHEMAS, req.filter);
      const sql = sqlNarrowing(narrowing);
      checkCandidates(await queries.countUsers(backend, sql), 'users');
      const candidates = await queries.users(backend, { narrowing: sql, limit: MAX_CANDIDATES });
      const memberships =
        candidates.length === 0
          ? []
          : await queries.membershipsOfUsers(
              backend,
              candidates.map((u) => u.id),
            );
      const matched = candidates.map((u) => userDocument(base, u, memberships)).filter((doc) => matches(filter, doc));
      const page = pageOf(matched, req);
      return { ...page, resources: page.resources.map((d) => project(USER_SCHEMAS, d, req)) };
    },
  };
}
