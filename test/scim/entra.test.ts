import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { basic, locationQuery, postForm } from '../helpers/http.ts';
import {
  about,
  auditOf,
  ENTERPRISE_SCHEMA,
  expectListResponse,
  expectScimError,
  expectStatus,
  GROUP_SCHEMA,
  PATCH_OP,
  startScimServer,
  USER_SCHEMA,
  type Json,
  type ScimAnswer,
  type ScimHarness,
} from './harness.ts';

/**
 * Microsoft Entra ID's provisioning service against /scim/v2 (docs/scim-provisioning.md "Connect
 * Microsoft Entra ID provisioning"). The bodies below are Microsoft's own, as published in "Tutorial:
 * Develop and plan provisioning for a SCIM endpoint in Microsoft Entra ID" (sections "User Operations"
 * and "Group Operations") and in "Known issues and resolutions with SCIM 2.0 protocol compliance of the
 * Microsoft Entra user provisioning service" (what the service sends without and with the
 * `aadOptscim062020` flag: `"value": "False"` as a string, `Remove` of a member by value list or by a
 * `members[value eq "…"]` path, a `replace` whose value object has dotted keys). Only the identifiers
 * change from user to user, as they do when Entra provisions: its `Test_User_<guid>` names and
 * externalIds are fresh GUIDs here, and the ids in the paths are the ones this server gave. The
 * manager `Add` and the `externalId eq` query are the checks of Microsoft's SCIM validator, written
 * from what it sends (its requests are not published as text).
 */

/** Entra sends every body as application/scim+json (set by the harness) and expects the same back. */
const ENTRA_HEADERS = { 'user-agent': 'Microsoft.AAD.Provisioning' };

/** "Create User", Request: verbatim but for the GUIDs, which Entra makes per user. */
function entraCreateUser(): Json {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
    externalId: randomUUID(),
    userName: `Test_User_${randomUUID()}`,
    active: true,
    emails: [
      {
        primary: true,
        type: 'work',
        value: `Test_User_${randomUUID()}@testuser.com`,
      },
    ],
    meta: {
      resourceType: 'User',
    },
    name: {
      formatted: 'givenName familyName',
      familyName: 'familyName',
      givenName: 'givenName',
    },
    roles: [],
  };
}

/** "Create Group", Request: verbatim, Microsoft's second schema URI included. */
function entraCreateGroup(): Json {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group', 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
    externalId: randomUUID(),
    displayName: `displayName-${randomUUID()}`,
    meta: {
      resourceType: 'Group',
    },
  };
}

const filterQuery = (filter: string, extra = '') => `?${extra}${extra ? '&' : ''}filter=${encodeURIComponent(filter)}`;

describe('Microsoft Entra ID provisioning replayed against /scim/v2 (sqlite)', () => {
  let h: ScimHarness;
  const entra = (method: string, path: string, body?: unknown) => h.scim(method, path, { body, headers: ENTRA_HEADERS });

  async function created(body = entraCreateUser()): Promise<{ sent: Json; answer: ScimAnswer; id: string }> {
    const answer = await entra('POST', '/Users', body);
    expectStatus(answer, 201);
    return { sent: body, answer, id: answer.body.id as string };
  }
  const getUser = async (id: string) => {
    const answer = await entra('GET', `/Users/${id}`);
    expectStatus(answer, 200);
    return answer.body;
  };
  /** Entra reads a PATCH's answer only for its status: 200 with the resource or 204 (its doc shows both). */
  const expectPatched = (a: ScimAnswer) => {
    if (a.status !== 200 && a.status !== 204) expectStatus(a, 200);
  };

  beforeAll(async () => {
    h = await startScimServer('sqlite');
  });
  afterAll(() => h?.stop());

  describe('User Operations', () => {
    test('Create User: 201 Created with id and meta, the user as sent, as application/scim+json', async () => {
      const { sent, answer, id } = await created();
      about(answer, () => {
        expect(answer.headers.get('content-type')).toMatch(/^application\/scim\+json/);
        expect(typeof id).toBe('string');
        expect(id.length).toBeGreaterThan(0);
        expect(answer.body.schemas).toContain(USER_SCHEMA);
        expect(answer.body).toMatchObject({
          id,
          externalId: sent.externalId,
          userName: sent.userName,
          active: true,
          name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
          emails: [{ value: sent.emails[0].value, type: 'work', primary: true }],
          meta: { resourceType: 'User' },
        });
        expect(Number.isNaN(Date.parse(answer.body.meta.created))).toBe(false);
        expect(Number.isNaN(Date.parse(answer.body.meta.lastModified))).toBe(false);
        // RFC 7644 §3.3: the new resource's URI, in meta.location and the Location header.
        expect(answer.body.meta.location).toBe(`${h.base}/Users/${id}`);
        expect(answer.headers.get('location')).toBe(answer.body.meta.location);
      });
    });

    test('Get User: 200 with the user; an unknown id: 404 in the Error schema, status "404"', async () => {
      const { sent, id } = await created();
      const found = await entra('GET', `/Users/${id}`);
      expectStatus(found, 200);
      about(found, () => {
        expect(found.headers.get('content-type')).toMatch(/^application\/scim\+json/);
        expect(found.body).toMatchObject({ id, externalId: sent.externalId, userName: sent.userName, active: true });
        expect(found.body.emails).toEqual([{ value: sent.emails[0].value, type: 'work', primary: true }]);
      });
      // "Response (User not found. The detail isn't required, only status.)"
      expectScimError(await entra('GET', `/Users/${randomUUID()}`), 404);
      expectScimError(await entra('GET', '/Users/5171a35d82074e068ce2'), 404);
    });

    test('Get User by query: userName eq "Test_User_…" answers a ListResponse of the one user', async () => {
      const { sent, id } = await created();
      const answer = await entra('GET', `/Users${filterQuery(`userName eq "${sent.userName}"`)}`);
      const resources = expectListResponse(answer, 1);
      about(answer, () => {
        expect(answer.body.startIndex).toBe(1);
        expect(resources).toHaveLength(1);
        expect(resources[0]).toMatchObject({ id, userName: sent.userName, externalId: sent.externalId, active: true });
        expect(resources[0].schemas).toContain(USER_SCHEMA);
        expect(resources[0].meta).toMatchObject({ resourceType: 'User' });
      });
    });

    test('Get User by query - Zero results: 200, totalResults 0, no resources', async () => {
      const answer = await entra('GET', `/Users${filterQuery('userName eq "non-existent user"')}`);
      const resources = expectListResponse(answer, 0);
      expect(resources).toEqual([]);
    });

    test('Get User by query on what Entra matches by: externalId eq and emails[type eq "work"].value eq', async () => {
      const { sent, id } = await created();
      const byExternalId = await entra('GET', `/Users${filterQuery(`externalId eq "${sent.externalId}"`)}`);
      expect(expectListResponse(byExternalId, 1)[0].id).toBe(id);
      const byMail = await entra('GET', `/Users${filterQuery(`emails[type eq "work"].value eq "${sent.emails[0].value}"`)}`);
      expect(expectListResponse(byMail, 1)[0].id).toBe(id);
      // Entra uses only eq and and.
      const both = await entra('GET', `/Users${filterQuery(`userName eq "${sent.userName}" and externalId eq "${sent.externalId}"`)}`);
      expect(expectListResponse(both, 1)[0].id).toBe(id);
    });

    test('Update User [Multi-valued properties]: "op": "Replace" of emails[type eq "work"].value and name.familyName', async () => {
      const { sent, id } = await created();
      const answer = await entra('PATCH', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'Replace',
            path: 'emails[type eq "work"].value',
            value: 'updatedEmail@microsoft.com',
          },
          {
            op: 'Replace',
            path: 'name.familyName',
            value: 'updatedFamilyName',
          },
        ],
      });
      expectPatched(answer);
      const user = await getUser(id);
      about(answer, () => {
        expect(user.userName).toBe(sent.userName);
        expect(user.name).toMatchObject({ familyName: 'updatedFamilyName', givenName: 'givenName' });
        // The work address changed in place: still one, still primary.
        expect(user.emails).toEqual([{ value: 'updatedEmail@microsoft.com', type: 'work', primary: true }]);
        if (answer.status === 200) expect(answer.body).toMatchObject({ id, name: { familyName: 'updatedFamilyName' } });
      });
    });

    test('Update User [Single-valued properties]: "Replace" of userName; the new name finds it, the old one nothing', async () => {
      const { sent, id } = await created();
      const newName = `${randomUUID()}@testuser.com`;
      const answer = await entra('PATCH', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'Replace',
            path: 'userName',
            value: newName,
          },
        ],
      });
      expectPatched(answer);
      expect((await getUser(id)).userName).toBe(newName);
      expect(expectListResponse(await entra('GET', `/Users${filterQuery(`userName eq "${newName}"`)}`), 1)[0].id).toBe(id);
      expectListResponse(await entra('GET', `/Users${filterQuery(`userName eq "${sent.userName}"`)}`), 0);
    });

    test('Disable User: "value": false, and what the service sends without the flag, "value": "False"; both read back as active false', async () => {
      for (const value of [false, 'False']) {
        const { sent, id } = await created();
        const answer = await entra('PATCH', `/Users/${id}`, {
          Operations: [
            {
              op: 'Replace',
              path: 'active',
              value,
            },
          ],
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        });
        expectPatched(answer);
        if (answer.status === 200) about(answer, () => expect(answer.body.active).toBe(false));
        // A disabled user is still returned, by id and by query: only a hard delete removes it.
        const user = await getUser(id);
        expect(user.active).toBe(false);
        const listed = expectListResponse(await entra('GET', `/Users${filterQuery(`userName eq "${sent.userName}"`)}`), 1);
        expect(listed[0]).toMatchObject({ id, active: false });
      }
    });

    test('a disabled user restored with "active" true ("True" without the flag) is active again', async () => {
      for (const [off, on] of [
        [false, true],
        ['False', 'True'],
      ]) {
        const { id } = await created();
        const replace = (value: unknown) => ({ schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value }] });
        expectPatched(await entra('PATCH', `/Users/${id}`, replace(off)));
        expect((await getUser(id)).active).toBe(false);
        expectPatched(await entra('PATCH', `/Users/${id}`, replace(on)));
        expect((await getUser(id)).active).toBe(true);
      }
    });

    test('Delete User: 204 No Content, then 404 by id, nothing by query, and 404 for a second DELETE', async () => {
      const { sent, id } = await created();
      const answer = await entra('DELETE', `/Users/${id}`);
      expectStatus(answer, 204);
      expect(answer.text).toBe('');
      expectScimError(await entra('GET', `/Users/${id}`), 404);
      expectListResponse(await entra('GET', `/Users${filterQuery(`userName eq "${sent.userName}"`)}`), 0);
      expectScimError(await entra('DELETE', `/Users/${id}`), 404);
    });

    test('without the flag, several "Replace" operations with paths (extension URN, externalId) change each attribute', async () => {
      const { id } = await created();
      const answer = await entra('PATCH', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          { op: 'Replace', path: 'displayName', value: 'Pvlo' },
          { op: 'Replace', path: 'emails[type eq "work"].value', value: 'TestBcwqnm@test.microsoft.com' },
          { op: 'Replace', path: 'name.givenName', value: 'Gtfd' },
          { op: 'Replace', path: 'name.familyName', value: 'Pkqf' },
          { op: 'Replace', path: 'externalId', value: 'Eqpj' },
          { op: 'Replace', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber', value: 'Eqpj' },
        ],
      });
      expectPatched(answer);
      const user = await getUser(id);
      about(answer, () => {
        expect(user).toMatchObject({ displayName: 'Pvlo', externalId: 'Eqpj', name: { givenName: 'Gtfd', familyName: 'Pkqf' } });
        expect(user.emails).toEqual([{ value: 'TestBcwqnm@test.microsoft.com', type: 'work', primary: true }]);
        expect(user.schemas).toContain(ENTERPRISE_SCHEMA);
        expect(user[ENTERPRISE_SCHEMA]).toMatchObject({ employeeNumber: 'Eqpj' });
      });
    });

    test('with the flag, one "replace" without a path whose value has dotted keys (name.givenName, the extension URN)', async () => {
      const { id } = await created();
      const answer = await entra('PATCH', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [
          {
            op: 'replace',
            path: 'emails[type eq "work"].value',
            value: 'TestMhvaes@test.microsoft.com',
          },
          {
            op: 'replace',
            value: {
              displayName: 'Bjfe',
              'name.givenName': 'Kkom',
              'name.familyName': 'Unua',
              'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber': 'Aklq',
            },
          },
        ],
      });
      expectPatched(answer);
      const user = await getUser(id);
      about(answer, () => {
        expect(user).toMatchObject({ displayName: 'Bjfe', name: { givenName: 'Kkom', familyName: 'Unua' } });
        expect(user.emails).toEqual([{ value: 'TestMhvaes@test.microsoft.com', type: 'work', primary: true }]);
        expect(user[ENTERPRISE_SCHEMA]).toMatchObject({ employeeNumber: 'Aklq' });
        // The dotted keys are paths, never attributes of their own.
        expect(user['name.givenName']).toBeUndefined();
      });
    });

    test('"Add" of a single-valued string (nickName), with and without the flag', async () => {
      const { id } = await created();
      expectPatched(
        await entra('PATCH', `/Users/${id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'Add', path: 'nickName', value: 'Babs' }],
        }),
      );
      expect((await getUser(id)).nickName).toBe('Babs');
      expectPatched(
        await entra('PATCH', `/Users/${id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: 'nickName', value: 'Barbara' }],
        }),
      );
      expect((await getUser(id)).nickName).toBe('Barbara');
    });

    test("the validator's manager: Add of the extension's manager path with the manager's id as a plain string", async () => {
      const manager = await created();
      const report = await created();
      const answer = await entra('PATCH', `/Users/${report.id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager', value: manager.id }],
      });
      expectPatched(answer);
      const user = await getUser(report.id);
      // RFC 7643 §4.3: manager is complex; the id Entra sends is its `value`.
      about(answer, () => expect(user[ENTERPRISE_SCHEMA]?.manager).toMatchObject({ value: manager.id }));
    });
  });

  describe('Group Operations', () => {
    const groupMembers = async (id: string): Promise<string[]> => {
      const answer = await entra('GET', `/Groups/${id}`);
      expectStatus(answer, 200);
      return ((answer.body.members ?? []) as Array<{ value: string }>).map((m) => m.value).sort();
    };

    test('Create Group: 201 with id and meta, no members yet', async () => {
      const sent = entraCreateGroup();
      const answer = await entra('POST', '/Groups', sent);
      expectStatus(answer, 201);
      about(answer, () => {
        expect(answer.headers.get('content-type')).toMatch(/^application\/scim\+json/);
        expect(answer.body.schemas).toContain(GROUP_SCHEMA);
        expect(answer.body).toMatchObject({ externalId: sent.externalId, displayName: sent.displayName, meta: { resourceType: 'Group' } });
        expect(typeof answer.body.id).toBe('string');
        expect(answer.body.members ?? []).toEqual([]);
        expect(answer.body.meta.location).toBe(`${h.base}/Groups/${answer.body.id}`);
      });
    });

    test('Get Group and Get Group by displayName, with excludedAttributes=members', async () => {
      const sent = entraCreateGroup();
      const create = await entra('POST', '/Groups', sent);
      expectStatus(create, 201);
      const id = create.body.id as string;
      const user = await created();
      expectPatched(
        await entra('PATCH', `/Groups/${id}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: user.id }] }],
        }),
      );

      const one = await entra('GET', `/Groups/${id}?excludedAttributes=members`);
      expectStatus(one, 200);
      about(one, () => {
        expect(one.body).toMatchObject({ id, externalId: sent.externalId, displayName: sent.displayName, meta: { resourceType: 'Group' } });
        expect(one.body).not.toHaveProperty('members');
      });

      const query = await entra(
        'GET',
        `/Groups?excludedAttributes=members&filter=${encodeURIComponent(`displayName eq "${sent.displayName}"`)}`,
      );
      const resources = expectListResponse(query, 1);
      about(query, () => {
        expect(resources[0]).toMatchObject({ id, displayName: sent.displayName });
        expect(resources[0]).not.toHaveProperty('members');
      });
      expectListResponse(await entra('GET', `/Groups${filterQuery('displayName eq "no such group"')}`), 0);
    });

    test('Update Group [Non-member attributes]: "Replace" of displayName answers 204 (or 200) and renames it', async () => {
      const create = await entra('POST', '/Groups', entraCreateGroup());
      expectStatus(create, 201);
      const id = create.body.id as string;
      const renamed = `${randomUUID()}updatedDisplayName`;
      expectPatched(
        await entra('PATCH', `/Groups/${id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [
            {
              op: 'Replace',
              path: 'displayName',
              value: renamed,
            },
          ],
        }),
      );
      const answer = await entra('GET', `/Groups/${id}`);
      expectStatus(answer, 200);
      expect(answer.body.displayName).toBe(renamed);
    });

    test('Update Group [Add Members] then [Remove Members], in both of the forms Entra sends', async () => {
      const create = await entra('POST', '/Groups', entraCreateGroup());
      expectStatus(create, 201);
      const id = create.body.id as string;
      const [a, b] = [await created(), await created()];

      for (const user of [a, b]) {
        const add = await entra('PATCH', `/Groups/${id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [
            {
              op: 'Add',
              path: 'members',
              value: [
                {
                  $ref: null,
                  value: user.id,
                },
              ],
            },
          ],
        });
        expectPatched(add);
      }
      expect(await groupMembers(id)).toEqual([a.id, b.id].sort());

      // The tutorial's (and the service's without the flag): a value list under the path `members`.
      expectPatched(
        await entra('PATCH', `/Groups/${id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [
            {
              op: 'Remove',
              path: 'members',
              value: [
                {
                  $ref: null,
                  value: a.id,
                },
              ],
            },
          ],
        }),
      );
      expect(await groupMembers(id)).toEqual([b.id]);

      // With the flag: a value filter in the path, no value.
      expectPatched(
        await entra('PATCH', `/Groups/${id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [
            {
              op: 'remove',
              path: `members[value eq "${b.id}"]`,
            },
          ],
        }),
      );
      expect(await groupMembers(id)).toEqual([]);
    });

    test('Delete Group: 204 No Content, then 404', async () => {
      const create = await entra('POST', '/Groups', entraCreateGroup());
      expectStatus(create, 201);
      const id = create.body.id as string;
      const answer = await entra('DELETE', `/Groups/${id}`);
      expectStatus(answer, 204);
      expectScimError(await entra('GET', `/Groups/${id}`), 404);
    });
  });

  /**
   * What a disable means outside SCIM: the user is a leaver (docs/directory-sync.md "What happens when
   * someone leaves"). Its SSO session ends, its tokens die at once, it can no longer sign in; audited.
   */
  describe('a user Entra disables or deletes is deprovisioned', () => {
    const PASSWORD = 'Scim-Password-4-tests';
    let app: { clientId: string; clientSecret: string; redirectUri: string };

    beforeAll(async () => {
      const data = await h.graphql<{ registerClient: { client: { clientId: string }; clientSecret: string } }>(
        'mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId } clientSecret } }',
        {
          i: {
            name: 'Provisioned app',
            redirectUris: ['http://localhost:3000/callback'],
            grantTypes: ['AUTHORIZATION_CODE', 'PASSWORD', 'REFRESH_TOKEN'],
            scopes: ['openid', 'profile', 'offline_access'],
          },
        },
      );
      app = {
        clientId: data.registerClient.client.clientId,
        clientSecret: data.registerClient.clientSecret,
        redirectUri: 'http://localhost:3000/callback',
      };
    });

    const passwordGrant = (username: string) =>
      postForm(
        `${h.server.url}/oauth/v20/token`,
        { grant_type: 'password', username, password: PASSWORD, scope: 'openid profile offline_access' },
        { authorization: basic(app.clientId, app.clientSecret) },
      );
    const introspect = async (token: string) =>
      (await (
        await postForm(`${h.server.url}/oauth/v20/introspect`, { token }, { authorization: basic(app.clientId, app.clientSecret) })
      ).json()) as {
        active: boolean;
      };
    const silentAuthorize = (browser: Browser) =>
      browser.authorize({
        client_id: app.clientId,
        redirect_uri: app.redirectUri,
        response_type: 'code',
        scope: 'openid profile',
        state: 'silent',
        prompt: 'none',
      });
    const userIdOf = async (userName: string) => {
      const user = await h.server.ctx.users.findByUsername('hr', userName);
      if (!user) throw new Error(`no local record of backend hr for the SCIM user ${userName}`);
      return user.id;
    };

    /** A provisioned user with a password (RFC 7643 §4.1.1), signed in in a browser and holding tokens. */
    async function signedInUser() {
      const body: Json = { ...entraCreateUser(), password: PASSWORD };
      const { id } = await created(body);
      const browser = new Browser(h.server);
      const { code } = await obtainCode(browser, app, body.userName, PASSWORD, { scope: 'openid profile offline_access' });
      const exchanged = await exchangeCode(h.server, app, code!);
      expect(exchanged.status).toBe(200);
      const tokens = (await exchanged.json()) as { access_token: string; refresh_token: string };
      expect(await introspect(tokens.access_token)).toMatchObject({ active: true });
      const silent = await silentAuthorize(browser);
      expect(locationQuery(silent).code).toBeDefined();
      return { scimId: id, userName: body.userName as string, browser, tokens, userId: await userIdOf(body.userName) };
    }

    test('Disable User ("False"): the session ends, the tokens die at once, sign-in is refused, user.deprovisioned is audited', async () => {
      const u = await signedInUser();
      expectPatched(
        await entra('PATCH', `/Users/${u.scimId}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
        }),
      );

      expect(await introspect(u.tokens.access_token)).toEqual({ active: false });
      expect(await introspect(u.tokens.refresh_token)).toEqual({ active: false });
      const silent = await silentAuthorize(u.browser);
      expect(locationQuery(silent)).toMatchObject({ error: 'login_required', state: 'silent' });
      const refresh = await postForm(
        `${h.server.url}/oauth/v20/token`,
        { grant_type: 'refresh_token', refresh_token: u.tokens.refresh_token },
        { authorization: basic(app.clientId, app.clientSecret) },
      );
      expect(refresh.status).toBe(400);
      expect((await passwordGrant(u.userName)).status).toBe(400);

      const record = await h.server.ctx.users.find(u.userId);
      expect(record).toMatchObject({ disabled: true, disabledBy: 'directory' });
      const events = await auditOf(h, 'user.deprovisioned', u.userId);
      expect(events).toHaveLength(1);
      expect(events[0]!.parsed).toMatchObject({ backend: 'hr' });
      expect(['disabled', 'inactive']).toContain(events[0]!.parsed.reason);
    });

    test('restored with "True", the user signs in again, user.reenabled is audited', async () => {
      const u = await signedInUser();
      const replace = (value: unknown) => ({ schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value }] });
      expectPatched(await entra('PATCH', `/Users/${u.scimId}`, replace('False')));
      expect((await passwordGrant(u.userName)).status).toBe(400);
      expectPatched(await entra('PATCH', `/Users/${u.scimId}`, replace('True')));
      expect((await passwordGrant(u.userName)).status).toBe(200);
      expect(await h.server.ctx.users.find(u.userId)).toMatchObject({ disabled: false, disabledBy: null });
      expect(await auditOf(h, 'user.reenabled', u.userId)).toHaveLength(1);
    });

    test('Delete User: the same, audited with the reason "deleted"', async () => {
      const u = await signedInUser();
      expectStatus(await entra('DELETE', `/Users/${u.scimId}`), 204);
      expect(await introspect(u.tokens.access_token)).toEqual({ active: false });
      expect(locationQuery(await silentAuthorize(u.browser))).toMatchObject({ error: 'login_required' });
      expect((await passwordGrant(u.userName)).status).toBe(400);
      const events = await auditOf(h, 'user.deprovisioned', u.userId);
      expect(events).toHaveLength(1);
      expect(events[0]!.parsed).toMatchObject({ backend: 'hr', reason: 'deleted' });
    });

    test('the enterprise attributes Entra sends are attributes for claim mappings (docs/access-and-claims.md)', async () => {
      const body: Json = {
        ...entraCreateUser(),
        [ENTERPRISE_SCHEMA]: { employeeNumber: '100009', department: 'Human Resources US' },
      };
      const { id } = await created(body);
      const user = await getUser(id);
      expect(user[ENTERPRISE_SCHEMA]).toMatchObject({ employeeNumber: '100009', department: 'Human Resources US' });

      const data = await h.graphql<{ registerClient: { client: { clientId: string } } }>(
        'mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { clientId } } }',
        {
          i: {
            name: 'HR portal',
            redirectUris: ['http://localhost:3000/callback'],
            scopes: ['openid', 'profile'],
            claimMappings: [
              { claim: 'department', source: 'ATTRIBUTE', attribute: 'department' },
              { claim: 'employee_number', source: 'ATTRIBUTE', attribute: 'employeeNumber' },
            ],
          },
        },
      );
      const preview = await h.graphql<{ previewAccess: { allowed: boolean; idTokenClaims: Record<string, unknown> } }>(
        'query($app: ID!, $user: ID!) { previewAccess(applicationId: $app, userId: $user) { allowed idTokenClaims } }',
        { app: data.registerClient.client.clientId, user: await userIdOf(body.userName) },
      );
      expect(preview.previewAccess).toMatchObject({
        allowed: true,
        idTokenClaims: { department: 'Human Resources US', employee_number: '100009' },
      });
    });
  });
});
