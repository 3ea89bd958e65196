import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { basic, postForm } from '../helpers/http.ts';
import {
  about,
  ENTERPRISE_SCHEMA,
  expectListResponse,
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
 * Okta's provisioning against /scim/v2 (docs/scim-provisioning.md "Connect Okta provisioning"), with the
 * requests of Okta's "SCIM 2.0 Protocol Reference" (developer.okta.com, okta-scim guides scim-20) as
 * published: the user lifecycle (lookup by userName with startIndex/count, create, read, PUT of the
 * whole user, PATCH deactivation with a value object and no path) and group push (create, rename by a
 * value object that repeats the id, membership by `remove` with a filter path and `add`, full `replace`,
 * PUT, DELETE). Okta's user names and ids are those of the reference; the ids in paths are the ones this
 * server gave. Then what neither client shows but RFC 7643/7644 and the product ask for: uniqueness,
 * ETags, the filter language, paging, attribute selection, errors, the write-only password and the
 * discovery endpoints; and a pushed group used by an access policy.
 */

/** What Okta's SCIM client sends on every request (its reference shows the User-Agent). */
const OKTA_HEADERS = { 'user-agent': 'Okta SCIM Client 1.0.0' };
const OKTA_TYPE = 'application/scim+json; charset=utf-8';

describe('Okta provisioning replayed against /scim/v2 (postgres)', () => {
  let h: ScimHarness;
  const okta = (method: string, path: string, body?: unknown) =>
    h.scim(method, path, { body, headers: OKTA_HEADERS, contentType: OKTA_TYPE });
  const expectPatched = (a: ScimAnswer) => {
    // Okta: "The SCIM server response to PATCH method requests can also be a HTTP 204 response".
    if (a.status !== 200 && a.status !== 204) expectStatus(a, 200);
  };
  const getUser = async (id: string) => {
    const a = await h.scim('GET', `/Users/${id}`);
    expectStatus(a, 200);
    return a.body;
  };
  const createUser = async (body: Record<string, unknown>) => {
    const a = await h.scim('POST', '/Users', { body: { schemas: [USER_SCHEMA], ...body } });
    expectStatus(a, 201);
    return a.body as Json;
  };
  const list = async (query: string, total?: number) => expectListResponse(await h.scim('GET', `/Users?${query}`), total);
  const filter = (f: string, extra = '') => `filter=${encodeURIComponent(f)}${extra}`;

  beforeAll(async () => {
    h = await startScimServer('postgres');
  });
  afterAll(() => h?.stop());

  describe("Okta's user lifecycle, as its reference shows it", () => {
    const USER = 'test.user@okta.local';
    let id: string;

    test('Determine if the User already exists: an empty ListResponse for an unknown userName', async () => {
      const a = await okta('GET', '/Users?filter=userName%20eq%20%22test.user%40okta.local%22&startIndex=1&count=100');
      const resources = expectListResponse(a, 0);
      expect(resources).toEqual([]);
      about(a, () => expect(a.body.startIndex).toBe(1));
    });

    test('Create the User: 201 with the user, an id, and never the password', async () => {
      const a = await okta('POST', '/Users', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'test.user@okta.local',
        name: {
          givenName: 'Test',
          familyName: 'User',
        },
        emails: [
          {
            primary: true,
            value: 'test.user@okta.local',
            type: 'work',
          },
        ],
        displayName: 'Test User',
        locale: 'en-US',
        externalId: '00ujl29u0le5T6Aj10h7',
        groups: [],
        password: '1mz050nq',
        active: true,
      });
      expectStatus(a, 201);
      about(a, () => {
        expect(a.body.schemas).toContain(USER_SCHEMA);
        expect(a.body).toMatchObject({
          userName: 'test.user@okta.local',
          name: { givenName: 'Test', familyName: 'User' },
          emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
          displayName: 'Test User',
          locale: 'en-US',
          externalId: '00ujl29u0le5T6Aj10h7',
          active: true,
          meta: { resourceType: 'User' },
        });
        expect(a.body).not.toHaveProperty('password');
        expect(typeof a.body.id).toBe('string');
      });
      id = a.body.id;
    });

    test('the lookup now finds the user; Okta reads the id from it', async () => {
      const resources = expectListResponse(
        await okta('GET', '/Users?filter=userName%20eq%20%22test.user%40okta.local%22&startIndex=1&count=100'),
        1,
      );
      expect(resources[0]).toMatchObject({ id, userName: USER });
      expect(resources[0]).not.toHaveProperty('password');
    });

    test('a second create of the same userName: 409 in the Error schema, scimType uniqueness', async () => {
      const a = await okta('POST', '/Users', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'test.user@okta.local',
        name: { givenName: 'Test', familyName: 'User' },
        emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
        displayName: 'Test User',
        locale: 'en-US',
        groups: [],
        password: '1mz050nq',
        active: true,
      });
      expectScimError(a, 409, 'uniqueness');
    });

    test('Retrieve Users: GET /Users?startIndex=1&count=100 lists it, numbers as integers', async () => {
      const a = await okta('GET', '/Users?startIndex=1&count=100');
      const resources = expectListResponse(a);
      about(a, () => {
        expect(a.body.startIndex).toBe(1);
        expect(resources.map((r) => r.id)).toContain(id);
        expect(a.body.itemsPerPage).toBe(resources.length);
      });
    });

    test('Retrieve a specific User: GET /Users/{id}', async () => {
      const a = await okta('GET', `/Users/${id}`);
      expectStatus(a, 200);
      about(a, () => {
        expect(a.body).toMatchObject({ id, userName: USER, active: true, name: { givenName: 'Test', familyName: 'User' } });
        expect(a.body).not.toHaveProperty('password');
      });
    });

    test('Update the User (PUT): the whole user as Okta read it, with middleName set, is the new user', async () => {
      const a = await okta('PUT', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        id,
        userName: 'test.user@okta.local',
        name: {
          givenName: 'Another',
          middleName: 'Excited',
          familyName: 'User',
        },
        emails: [
          {
            primary: true,
            value: 'test.user@okta.local',
            type: 'work',
            display: 'test.user@okta.local',
          },
        ],
        active: true,
        groups: [],
        meta: {
          resourceType: 'User',
        },
      });
      expectStatus(a, 200);
      about(a, () => {
        expect(a.body).toMatchObject({
          id,
          userName: USER,
          name: { givenName: 'Another', middleName: 'Excited', familyName: 'User' },
          emails: [{ primary: true, value: USER, type: 'work', display: USER }],
          active: true,
        });
        // PUT replaces: what the body left out is gone (RFC 7644 §3.5.1), readOnly meta kept.
        expect(a.body).not.toHaveProperty('displayName');
        expect(a.body).not.toHaveProperty('locale');
        expect(a.body.meta.resourceType).toBe('User');
      });
      expect((await getUser(id)).name).toMatchObject({ givenName: 'Another', middleName: 'Excited' });
    });

    test('Update a specific User (PATCH): deactivation by a value object without a path', async () => {
      const a = await okta('PATCH', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'replace',
            value: {
              active: false,
            },
          },
        ],
      });
      expectPatched(a);
      if (a.status === 200) about(a, () => expect(a.body).toMatchObject({ id, active: false }));
      expect((await getUser(id)).active).toBe(false);
      // Okta never deletes users: the deactivated one is still read back.
      expect(expectListResponse(await okta('GET', `/Users?${filter(`userName eq "${USER}"`)}`), 1)[0].active).toBe(false);
    });

    test('reactivation and password sync by the same kind of PATCH; the synced password signs in', async () => {
      expectPatched(await okta('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: true } }] }));
      expect((await getUser(id)).active).toBe(true);
      const password = 'Okta-synced-Passw0rd';
      const a = await okta('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { password } }] });
      expectPatched(a);
      if (a.status === 200) about(a, () => expect(a.body).not.toHaveProperty('password'));
      const { clientId, clientSecret } = await h.server.client({ grantTypes: ['password'] });
      const grant = await postForm(
        `${h.server.url}/oauth/v20/token`,
        { grant_type: 'password', username: USER, password },
        { authorization: basic(clientId, clientSecret!) },
      );
      expect(grant.status).toBe(200);
    });
  });

  describe("Okta's group push, as its reference shows it", () => {
    const memberIds = async (id: string) => {
      const a = await okta('GET', `/Groups/${id}`);
      expectStatus(a, 200);
      return ((a.body.members ?? []) as Array<{ value: string }>).map((m) => m.value).sort();
    };

    test('create, list, read, rename, change members, replace members, PUT, delete', async () => {
      const displayName = `Test SCIMv2 ${randomUUID()}`;
      const create = await okta('POST', '/Groups', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
        displayName,
        members: [],
      });
      expectStatus(create, 201);
      const id = create.body.id as string;
      about(create, () => {
        expect(create.body.schemas).toContain(GROUP_SCHEMA);
        expect(create.body).toMatchObject({ displayName, meta: { resourceType: 'Group' } });
        expect(create.body.members ?? []).toEqual([]);
      });

      const all = await okta('GET', '/Groups?startIndex=1&count=100');
      expect(expectListResponse(all).map((g) => g.id)).toContain(id);
      const byName = await okta('GET', `/Groups?filter=${encodeURIComponent(`displayName eq "${displayName}"`)}&startIndex=1&count=100`);
      expect(expectListResponse(byName, 1)[0]).toMatchObject({ id, displayName });

      const read = await okta('GET', `/Groups/${id}`);
      expectStatus(read, 200);
      about(read, () => expect(read.body).toMatchObject({ id, displayName }));

      // "Update a specific Group name": the value object repeats the group's own id.
      const renamed = `${displayName} renamed`;
      const rename = await okta('PATCH', `/Groups/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'replace',
            value: {
              id,
              displayName: renamed,
            },
          },
        ],
      });
      expectPatched(rename);
      expect((await okta('GET', `/Groups/${id}`)).body.displayName).toBe(renamed);

      const [a, b] = [await createUser({ userName: unique('okta-a') }), await createUser({ userName: unique('okta-b') })];
      expectPatched(
        await okta('PATCH', `/Groups/${id}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'add', path: 'members', value: [{ value: b.id }] }],
        }),
      );
      expect(await memberIds(id)).toEqual([b.id]);

      // "Update specific Group membership": remove one by a filter path and add another, in one request.
      const membership = await okta('PATCH', `/Groups/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'remove',
            path: `members[value eq "${b.id}"]`,
          },
          {
            op: 'add',
            path: 'members',
            value: [
              {
                value: a.id,
                display: a.userName,
              },
            ],
          },
        ],
      });
      expectPatched(membership);
      expect(await memberIds(id)).toEqual([a.id]);

      // "a full push of the membership … using the replace operation"
      const replace = await okta('PATCH', `/Groups/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'replace',
            path: 'members',
            value: [
              { value: a.id, display: a.userName },
              { value: b.id, display: b.userName },
            ],
          },
        ],
      });
      expectPatched(replace);
      expect(await memberIds(id)).toEqual([a.id, b.id].sort());

      // App integrations made with Okta's wizard send a PUT of the whole group instead.
      const put = await okta('PUT', `/Groups/${id}`, {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
        id,
        displayName: renamed,
        members: [{ value: b.id, display: b.userName }],
      });
      expectStatus(put, 200);
      about(put, () => expect(put.body).toMatchObject({ id, displayName: renamed }));
      expect(await memberIds(id)).toEqual([b.id]);

      const del = await okta('DELETE', `/Groups/${id}`);
      expectStatus(del, 204);
      expectScimError(await okta('GET', `/Groups/${id}`), 404);
    });
  });

  describe("the checks of Okta's SCIM test suite", () => {
    test('count=1&startIndex=1 pages by one; userName eq matches in any case; an unknown id is 404', async () => {
      const u = await createUser({ userName: `${unique('Okta.Case')}@Example.org` });
      await createUser({ userName: unique('okta-other') });
      const page = await h.scim('GET', '/Users?count=1&startIndex=1');
      const resources = expectListResponse(page);
      about(page, () => {
        expect(resources).toHaveLength(1);
        expect(page.body.totalResults).toBeGreaterThanOrEqual(2);
        expect(page.body).toMatchObject({ startIndex: 1, itemsPerPage: 1 });
      });
      expect((await list(filter(`userName eq "${(u.userName as string).toUpperCase()}"`), 1))[0].id).toBe(u.id);
      expect((await list(filter(`userName eq "${(u.userName as string).toLowerCase()}"`), 1))[0].id).toBe(u.id);
      expectScimError(await h.scim('GET', `/Users/${randomUUID()}`), 404);
    });
  });

  describe('RFC 7643/7644 beyond what the two clients show', () => {
    test('userName is unique without regard to case: 409 uniqueness on create, PUT and PATCH', async () => {
      const name = `${unique('Case.Person')}@Example.org`;
      const first = await createUser({ userName: name });
      const again = await h.scim('POST', '/Users', { body: { schemas: [USER_SCHEMA], userName: name.toLowerCase() } });
      expectScimError(again, 409, 'uniqueness');
      const other = await createUser({ userName: unique('someone-else') });
      expectScimError(
        await h.scim('PUT', `/Users/${other.id}`, { body: { schemas: [USER_SCHEMA], userName: name.toUpperCase() } }),
        409,
        'uniqueness',
      );
      expectScimError(
        await h.scim('PATCH', `/Users/${other.id}`, {
          body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'userName', value: name.toLowerCase() }] },
        }),
        409,
        'uniqueness',
      );
      expect((await getUser(first.id)).userName).toBe(name);
      // Its own name in another case is no clash.
      const self = await h.scim('PATCH', `/Users/${first.id}`, {
        body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'userName', value: name.toUpperCase() }] },
      });
      expectPatched(self);
    });

    test('ETags: meta.version and the ETag header agree and change with each write; a stale If-Match is 412', async () => {
      const user = await createUser({ userName: unique('etag'), name: { givenName: 'Eve' } });
      const read = await h.scim('GET', `/Users/${user.id}`);
      expectStatus(read, 200);
      const version = read.body.meta?.version as string;
      about(read, () => {
        expect(typeof version).toBe('string');
        expect(version).toMatch(/^(W\/)?".+"$/);
        expect(read.headers.get('etag')).toBe(version);
        expect(user.meta.version).toBe(version);
      });

      const patch = (ifMatch: string, givenName: string) =>
        h.scim('PATCH', `/Users/${user.id}`, {
          body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.givenName', value: givenName }] },
          headers: { 'if-match': ifMatch },
        });
      const ok = await patch(version, 'Eva');
      expectPatched(ok);
      const after = await h.scim('GET', `/Users/${user.id}`);
      const next = after.body.meta.version as string;
      about(after, () => {
        expect(next).not.toBe(version);
        expect(after.headers.get('etag')).toBe(next);
      });

      // The old version is stale now, for every kind of write; nothing changes.
      expectScimError(await patch(version, 'Evita'), 412);
      expectScimError(
        await h.scim('PUT', `/Users/${user.id}`, {
          body: { schemas: [USER_SCHEMA], userName: user.userName },
          headers: { 'if-match': version },
        }),
        412,
      );
      expectScimError(await h.scim('DELETE', `/Users/${user.id}`, { headers: { 'if-match': version } }), 412);
      expectScimError(await patch('W/"not-a-version"', 'Evita'), 412);
      expect((await getUser(user.id)).name.givenName).toBe('Eva');
      // `*` and the current version both pass.
      expectPatched(await patch('*', 'Evi'));
      const current = (await getUser(user.id)).meta.version as string;
      expectStatus(await h.scim('DELETE', `/Users/${user.id}`, { headers: { 'if-match': current } }), 204);
    });

    describe('filters', () => {
      const p = unique('flt');
      const ids: Record<'anna' | 'bert' | 'carl', string> = { anna: '', bert: '', carl: '' };
      let before: string;

      beforeAll(async () => {
        before = new Date(Date.now() - 60_000).toISOString();
        ids.anna = (
          await createUser({
            userName: `${p}-anna@example.org`,
            name: { givenName: 'Anna', familyName: 'Andersson' },
            title: 'Engineer',
            emails: [
              { value: `${p}-anna@work.example`, type: 'work', primary: true },
              { value: `${p}-anna@home.example`, type: 'home' },
            ],
            active: true,
          })
        ).id;
        ids.bert = (
          await createUser({
            userName: `${p}-bert@example.org`,
            name: { givenName: 'Bert', familyName: 'Berg' },
            emails: [{ value: `${p}-bert@work.example`, type: 'work' }],
            active: false,
          })
        ).id;
        ids.carl = (
          await createUser({
            userName: `${p}-carl@example.org`,
            name: { givenName: 'Carl', familyName: 'Carlsson' },
            title: 'Manager',
            emails: [{ value: `${p}-carl@home.example`, type: 'home' }],
            active: true,
          })
        ).id;
      });

      const found = async (expression: string) => {
        const a = await h.scim('GET', `/Users?${filter(`userName sw "${p}" and (${expression})`)}`);
        const resources = expectListResponse(a);
        const names = Object.fromEntries(Object.entries(ids).map(([k, v]) => [v, k]));
        return resources.map((r) => names[r.id] ?? r.id).sort();
      };

      test.each([
        [`emails[type eq "work"].value eq "${p}-anna@work.example"`, ['anna']],
        ['emails[type eq "work" and value co "bert"]', ['bert']],
        ['emails[type eq "work"]', ['anna', 'bert']],
        ['title pr', ['anna', 'carl']],
        ['not (title pr)', ['bert']],
        ['name.familyName eq "Berg" or name.familyName eq "Carlsson"', ['bert', 'carl']],
        ['active eq false', ['bert']],
        ['name.familyName ne "Berg"', ['anna', 'carl']],
        ['name.familyName co "sson"', ['anna', 'carl']],
        ['name.givenName sw "c"', ['carl']],
        ['name.familyName gt "B"', ['bert', 'carl']],
        ['name.familyName ge "Berg"', ['bert', 'carl']],
        ['name.familyName lt "Berg"', ['anna']],
        ['name.familyName le "Berg"', ['anna', 'bert']],
        ['title eq "engineer"', ['anna']],
      ])('%s', async (expression, expected) => {
        expect([expression, await found(expression)]).toEqual([expression, expected]);
      });

      test('meta.lastModified compares as a date; the operators and attribute names in any case', async () => {
        expect(await found(`meta.lastModified ge "${before}"`)).toEqual(['anna', 'bert', 'carl']);
        expect(await found(`meta.lastModified lt "${before}"`)).toEqual([]);
        expect(await found('NAME.FAMILYNAME EQ "Berg"')).toEqual(['bert']);
      });

      test('a filter that does not parse: 400 invalidFilter', async () => {
        for (const bad of ['userName eq', 'userName zz "x"', '(userName eq "x"', 'emails[type eq "work"']) {
          expectScimError(await h.scim('GET', `/Users?${filter(bad)}`), 400, 'invalidFilter');
        }
      });
    });

    test('paging: startIndex and count walk a filtered list in a stable order; count=0 only counts', async () => {
      const p = unique('page');
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push((await createUser({ userName: `${p}-${i}` })).id);
      const f = filter(`userName sw "${p}"`);
      const seen: string[] = [];
      for (const startIndex of [1, 3, 5]) {
        const a = await h.scim('GET', `/Users?${f}&startIndex=${startIndex}&count=2`);
        const resources = expectListResponse(a, 5);
        about(a, () => {
          expect(a.body.startIndex).toBe(startIndex);
          expect(resources).toHaveLength(startIndex === 5 ? 1 : 2);
          expect(a.body.itemsPerPage).toBe(resources.length);
        });
        seen.push(...resources.map((r) => r.id));
      }
      expect([...seen].sort()).toEqual([...made].sort());
      // The same pages again, in the same order.
      const again: string[] = [];
      for (const startIndex of [1, 3, 5])
        again.push(...expectListResponse(await h.scim('GET', `/Users?${f}&startIndex=${startIndex}&count=2`)).map((r) => r.id));
      expect(again).toEqual(seen);

      const counted = await h.scim('GET', `/Users?${f}&count=0`);
      expect(expectListResponse(counted, 5)).toEqual([]);
      // RFC 7644 §3.4.2.4: a startIndex below 1 is 1.
      const zero = await h.scim('GET', `/Users?${f}&startIndex=0&count=2`);
      expectListResponse(zero, 5);
      about(zero, () => expect(zero.body.startIndex).toBe(1));
      const past = await h.scim('GET', `/Users?${f}&startIndex=6&count=2`);
      expect(expectListResponse(past, 5)).toEqual([]);
    });

    test('attributes and excludedAttributes, on a resource and on a list', async () => {
      const user = await createUser({
        userName: unique('attrs'),
        name: { givenName: 'Ada', familyName: 'Lovelace' },
        emails: [{ value: 'ada@example.org', type: 'work' }],
        title: 'Countess',
      });
      const only = await h.scim('GET', `/Users/${user.id}?attributes=userName`);
      expectStatus(only, 200);
      about(only, () => {
        // `id` is always returned (RFC 7643 §3.1), whatever is asked.
        expect(only.body).toMatchObject({ id: user.id, userName: user.userName });
        for (const gone of ['name', 'emails', 'title']) expect(only.body).not.toHaveProperty(gone);
      });

      const sub = await h.scim('GET', `/Users/${user.id}?attributes=name.givenName,emails`);
      expectStatus(sub, 200);
      about(sub, () => {
        expect(sub.body.name).toEqual({ givenName: 'Ada' });
        expect(sub.body.emails).toEqual([{ value: 'ada@example.org', type: 'work' }]);
        expect(sub.body).not.toHaveProperty('title');
      });

      const excluded = await h.scim('GET', `/Users/${user.id}?excludedAttributes=emails,name`);
      expectStatus(excluded, 200);
      about(excluded, () => {
        expect(excluded.body).toMatchObject({ id: user.id, userName: user.userName, title: 'Countess' });
        expect(excluded.body).not.toHaveProperty('emails');
        expect(excluded.body).not.toHaveProperty('name');
      });

      const listed = await h.scim('GET', `/Users?${filter(`userName eq "${user.userName}"`)}&attributes=userName`);
      const [one] = expectListResponse(listed, 1);
      about(listed, () => {
        expect(one).toMatchObject({ id: user.id, userName: user.userName });
        expect(one).not.toHaveProperty('name');
      });
    });

    test("errors in SCIM's shape: a body that is not JSON, a user without userName, a bad PATCH, remove without a path", async () => {
      expectScimError(
        await h.scim('POST', '/Users', { raw: '{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": ' }),
        400,
        'invalidSyntax',
      );
      expectScimError(
        await h.scim('POST', '/Users', { body: { schemas: [USER_SCHEMA], name: { givenName: 'No', familyName: 'Name' } } }),
        400,
        'invalidValue',
      );
      const user = await createUser({ userName: unique('errors') });
      const badOp = await h.scim('PATCH', `/Users/${user.id}`, {
        body: { schemas: [PATCH_OP], Operations: [{ op: 'frobnicate', path: 'title', value: 'x' }] },
      });
      expectScimError(badOp, 400);
      expectScimError(
        await h.scim('PATCH', `/Users/${user.id}`, { body: { schemas: [PATCH_OP], Operations: [{ op: 'remove' }] } }),
        400,
        'noTarget',
      );
      expectScimError(
        await h.scim('PATCH', `/Users/${randomUUID()}`, {
          body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'title', value: 'x' }] },
        }),
        404,
      );
      expectScimError(await h.scim('PUT', `/Users/${randomUUID()}`, { body: { schemas: [USER_SCHEMA], userName: unique('ghost') } }), 404);
      expectScimError(await h.scim('DELETE', `/Groups/${randomUUID()}`), 404);
      expectScimError(await h.scim('GET', '/Users', { token: null }), 401);
      expectScimError(await h.scim('GET', '/Users', { token: 'not-a-scim-token' }), 401);
    });

    test('password is write-only: never in an answer, asked for or not; it signs in', async () => {
      const password = 'Write-only-Passw0rd';
      const created = await h.scim('POST', '/Users', { body: { schemas: [USER_SCHEMA], userName: unique('pw'), password } });
      expectStatus(created, 201);
      const id = created.body.id as string;
      const userName = created.body.userName as string;
      const answers: ScimAnswer[] = [
        created,
        await h.scim('GET', `/Users/${id}`),
        await h.scim('GET', `/Users/${id}?attributes=password`),
        await h.scim('GET', `/Users?${filter(`userName eq "${userName}"`)}&attributes=password,userName`),
        await h.scim('PATCH', `/Users/${id}`, {
          body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'password', value: `${password}2` }] },
        }),
        await h.scim('PUT', `/Users/${id}`, { body: { schemas: [USER_SCHEMA], userName, password: `${password}3` } }),
      ];
      for (const a of answers) about(a, () => expect(a.text).not.toContain('Passw0rd'));
      for (const a of answers) about(a, () => expect(a.text).not.toMatch(/"password"/));
      const { clientId, clientSecret } = await h.server.client({ grantTypes: ['password'] });
      const grant = (pw: string) =>
        postForm(
          `${h.server.url}/oauth/v20/token`,
          { grant_type: 'password', username: userName, password: pw },
          { authorization: basic(clientId, clientSecret!) },
        );
      expect((await grant(`${password}3`)).status).toBe(200);
      expect((await grant(password)).status).toBe(400);
    });

    test('discovery: ServiceProviderConfig, ResourceTypes, Schemas', async () => {
      const config = await h.scim('GET', '/ServiceProviderConfig');
      expectStatus(config, 200);
      about(config, () => {
        expect(config.body.schemas).toEqual(['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig']);
        expect(config.body).toMatchObject({
          patch: { supported: true },
          filter: { supported: true },
          etag: { supported: true },
          changePassword: { supported: true },
        });
        expect(Number.isInteger(config.body.filter.maxResults)).toBe(true);
        expect(typeof config.body.bulk?.supported).toBe('boolean');
        expect(typeof config.body.sort?.supported).toBe('boolean');
        expect(config.body.authenticationSchemes.map((s: { type: string }) => s.type)).toContain('oauthbearertoken');
      });

      const types = await h.scim('GET', '/ResourceTypes');
      const resourceTypes = expectListResponse(types, 2);
      about(types, () => {
        const user = resourceTypes.find((t) => t.id === 'User');
        const group = resourceTypes.find((t) => t.id === 'Group');
        expect(user).toMatchObject({ name: 'User', endpoint: '/Users', schema: USER_SCHEMA });
        expect(user.schemaExtensions).toEqual(expect.arrayContaining([expect.objectContaining({ schema: ENTERPRISE_SCHEMA })]));
        expect(group).toMatchObject({ name: 'Group', endpoint: '/Groups', schema: GROUP_SCHEMA });
        expect(user.schemas).toEqual(['urn:ietf:params:scim:schemas:core:2.0:ResourceType']);
      });
      const userType = await h.scim('GET', '/ResourceTypes/User');
      expectStatus(userType, 200);
      about(userType, () => expect(userType.body).toMatchObject({ id: 'User', endpoint: '/Users' }));

      const schemas = await h.scim('GET', '/Schemas');
      const all = expectListResponse(schemas);
      about(schemas, () => expect(all.map((s) => s.id)).toEqual(expect.arrayContaining([USER_SCHEMA, GROUP_SCHEMA, ENTERPRISE_SCHEMA])));
      const userSchema = await h.scim('GET', `/Schemas/${USER_SCHEMA}`);
      expectStatus(userSchema, 200);
      about(userSchema, () => {
        const attr = (name: string) => (userSchema.body.attributes as Array<Record<string, unknown>>).find((a) => a.name === name);
        expect(attr('userName')).toMatchObject({ type: 'string', required: true, caseExact: false, uniqueness: 'server' });
        expect(attr('password')).toMatchObject({ type: 'string', mutability: 'writeOnly', returned: 'never' });
        expect(attr('active')).toMatchObject({ type: 'boolean' });
        expect(attr('emails')).toMatchObject({ type: 'complex', multiValued: true });
      });
      const enterprise = await h.scim('GET', `/Schemas/${ENTERPRISE_SCHEMA}`);
      expectStatus(enterprise, 200);
      about(enterprise, () => {
        const names = (enterprise.body.attributes as Array<{ name: string }>).map((a) => a.name);
        expect(names).toEqual(expect.arrayContaining(['employeeNumber', 'department', 'manager']));
      });
      expectScimError(await h.scim('GET', '/Schemas/urn:example:no-such-schema'), 404);
    });
  });

  /** A pushed group is a group for access policies (docs/access-and-claims.md). */
  describe('a group Okta pushes decides who may use an application', () => {
    test('ASSIGNED to the group: its member gets tokens, others are refused; taken out, the member is refused too', async () => {
      const password = 'Group-member-Passw0rd';
      const member = await createUser({ userName: unique('okta-member'), password });
      const outsider = await createUser({ userName: unique('okta-outsider'), password });
      const displayName = `Wiki users ${randomUUID()}`;
      const group = await okta('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName, members: [] });
      expectStatus(group, 201);
      expectPatched(
        await okta('PATCH', `/Groups/${group.body.id}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'add', path: 'members', value: [{ value: member.id, display: member.userName }] }],
        }),
      );

      const data = await h.graphql<{ registerClient: { client: { clientId: string }; clientSecret: string } }>(
        'mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId } clientSecret } }',
        {
          i: {
            name: 'Wiki',
            redirectUris: ['http://localhost:3000/callback'],
            grantTypes: ['PASSWORD'],
            scopes: ['openid', 'profile'],
            access: { mode: 'ASSIGNED', groups: [displayName] },
          },
        },
      );
      const { clientId } = data.registerClient.client;
      const secret = data.registerClient.clientSecret;
      const grant = (username: string) =>
        postForm(
          `${h.server.url}/oauth/v20/token`,
          { grant_type: 'password', username, password, scope: 'openid' },
          { authorization: basic(clientId, secret) },
        );
      const localId = async (userName: string) => (await h.server.ctx.users.findByUsername('hr', userName))!.id;
      const preview = async (userName: string) =>
        (
          await h.graphql<{ previewAccess: { allowed: boolean; reason: string } }>(
            'query($app: ID!, $user: ID!) { previewAccess(applicationId: $app, userId: $user) { allowed reason } }',
            { app: clientId, user: await localId(userName) },
          )
        ).previewAccess;

      expect(await preview(member.userName)).toEqual({ allowed: true, reason: `group:${displayName}` });
      expect((await grant(member.userName)).status).toBe(200);
      const refused = await grant(outsider.userName);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: 'invalid_grant', error_description: 'the user may not use this application' });

      expectPatched(
        await okta('PATCH', `/Groups/${group.body.id}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'remove', path: `members[value eq "${member.id}"]` }],
        }),
      );
      expect((await preview(member.userName)).allowed).toBe(false);
      expect((await grant(member.userName)).status).toBe(400);
    });
  });
});
