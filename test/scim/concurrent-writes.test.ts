import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { databaseKinds } from '../helpers/databases.ts';
import {
  describeExchange,
  expectScimError,
  expectStatus,
  GROUP_SCHEMA,
  PATCH_OP,
  startScimServer,
  unique,
  USER_SCHEMA,
  type Json,
  type ScimAnswer,
  type ScimHarness,
} from './harness.ts';

/**
 * Users deleted while their groups change, all at once (docs/scim-provisioning.md "What the endpoint
 * supports"): every answer is SCIM's, never a 500 (on PostgreSQL, where writes run side by side, a
 * deadlock, 40P01, was one), and afterwards no group holds a deleted user and every member's `groups`
 * names exactly the groups they are in. SQLite runs one write at a time; the same rounds check its end state.
 */

const ROUNDS = 25;
const GROUPS = 3;

/**
 * The answers a request may get while the user it names is being deleted and its group may go: 400
 * invalidValue adds a user deleted first; 409 is the DELETE's guard against groups taking the user in.
 */
const ALLOWED = {
  deleteUser: [204, 409],
  addMember: [200, 400, 404],
  removeMember: [200, 404],
  replaceGroup: [200, 400, 404],
  renameGroup: [200, 404],
  deleteGroup: [204],
  createGroup: [201, 400],
} as const;

describe.each(databaseKinds)('SCIM writes of the same users at once (%s)', (kind) => {
  let h: ScimHarness;
  const bystanders: string[] = [];

  const post = async (path: string, body: Record<string, unknown>, schema: string) => {
    const a = await h.scim('POST', path, { body: { schemas: [schema], ...body } });
    expectStatus(a, 201);
    return a.body as Json;
  };
  const patch = (path: string, Operations: unknown[]) => h.scim('PATCH', path, { body: { schemas: [PATCH_OP], Operations } });
  const members = (ids: readonly string[]) => ids.map((value) => ({ value }));

  beforeAll(async () => {
    h = await startScimServer(kind);
    for (let i = 0; i < 3; i++) bystanders.push((await post('/Users', { userName: unique(`bystander-${i}`) }, USER_SCHEMA)).id);
  });
  afterAll(() => h?.stop());

  test(`${ROUNDS} rounds of user DELETEs against group PATCH, PUT and DELETE of their groups: SCIM answers only, and consistent`, async () => {
    const deleted: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const victims = [
        (await post('/Users', { userName: unique(`leaver-${round}-a`) }, USER_SCHEMA)).id,
        (await post('/Users', { userName: unique(`leaver-${round}-b`) }, USER_SCHEMA)).id,
      ];
      const [a, b] = victims as [string, string];
      const groups: Json[] = [];
      for (let i = 0; i < GROUPS; i++) {
        groups.push(
          await post('/Groups', { displayName: unique(`team-${round}-${i}`), members: members([...bystanders, ...victims]) }, GROUP_SCHEMA),
        );
      }

      const requests: Array<[keyof typeof ALLOWED, Promise<ScimAnswer>]> = [
        ['deleteUser', h.scim('DELETE', `/Users/${a}`)],
        ['deleteUser', h.scim('DELETE', `/Users/${b}`)],
        ['deleteGroup', h.scim('DELETE', `/Groups/${groups[round % GROUPS].id}`)],
        // A group the user joins while being deleted: one its DELETE did not find when it started.
        [
          'createGroup',
          h.scim('POST', '/Groups', { body: { schemas: [GROUP_SCHEMA], displayName: unique(`late-${round}`), members: members([a, b]) } }),
        ],
      ];
      for (const g of groups) {
        const path = `/Groups/${g.id}`;
        requests.push(
          ['removeMember', patch(path, [{ op: 'remove', path: `members[value eq "${a}"]` }])],
          ['addMember', patch(path, [{ op: 'add', path: 'members', value: members([a]) }])],
          [
            'addMember',
            patch(path, [
              { op: 'add', path: 'members', value: members([b]) },
              { op: 'remove', path: 'members', value: members([a]) },
            ]),
          ],
          [
            'replaceGroup',
            h.scim('PUT', path, { body: { schemas: [GROUP_SCHEMA], displayName: g.displayName, members: members([b, ...bystanders, a]) } }),
          ],
          // A new name rewrites every member's `groups`: the bystanders are written by all of these at once.
          ['renameGroup', patch(path, [{ op: 'replace', value: { id: g.id, displayName: `${g.displayName}-renamed` } }])],
        );
      }
      const answers = await Promise.all(requests.map(async ([what, p]) => [what, await p] as const));

      const unexpected = answers.filter(([what, x]) => !(ALLOWED[what] as readonly number[]).includes(x.status));
      expect(unexpected.map(([what, x]) => `round ${round}, ${what}: ${describeExchange(x)}`)).toEqual([]);
      for (const [, x] of answers) {
        if (x.status >= 400) expectScimError(x, x.status, x.status === 400 ? 'invalidValue' : undefined);
      }
      for (const [what, x] of answers) if (what === 'deleteUser' && x.status === 204) deleted.push(x.path.split('/')[2]!);

      for (const id of victims) {
        if (deleted.includes(id)) expect((await h.scim('GET', `/Users/${id}`)).status).toBe(404);
      }
      for (const g of groups) {
        const got = await h.scim('GET', `/Groups/${g.id}`);
        if (got.status === 404) continue;
        expectStatus(got, 200);
        const listed: string[] = (got.body.members ?? []).map((m: Json) => m.value);
        expect(listed.filter((id) => deleted.includes(id))).toEqual([]);
      }
    }
    expect(deleted.length).toBeGreaterThan(0);

    // No membership of a user SCIM no longer shows (a deleted one), in any group of the backend.
    const retiredMembers = await h.server
      .sql('scim_group_members as m')
      .join('users as u', 'u.id', 'm.user_id')
      .whereNull('u.scim')
      .select('m.group_id', 'm.user_id');
    expect(retiredMembers).toEqual([]);
    // Every user's `groups` (what access policies read) is the names of the groups they are in, no more, no fewer.
    const memberships = await h.server
      .sql('scim_group_members as m')
      .join('scim_groups as g', 'g.id', 'm.group_id')
      .select('m.user_id', 'g.display_name');
    const expected = new Map<string, string[]>();
    for (const m of memberships) expected.set(m.user_id, [...(expected.get(m.user_id) ?? []), m.display_name].sort());
    const users = await h.server.sql('users').where({ backend: 'hr' }).select('id', 'groups');
    for (const u of users) {
      const groups = (typeof u.groups === 'string' ? JSON.parse(u.groups) : u.groups) as string[];
      expect({ user: u.id, groups: [...groups].sort() }).toEqual({ user: u.id, groups: expected.get(u.id) ?? [] });
    }
    expect(h.server.logs.filter((line) => /"level":50/.test(line))).toEqual([]);
  }, 300_000);
});
