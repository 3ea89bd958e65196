import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import SCIMMY from 'scimmy';
import {
  ENTERPRISE_SCHEMA,
  expectListResponse,
  expectScimError,
  expectStatus,
  GROUP_SCHEMA,
  PATCH_OP,
  SCIM_TYPE,
  startScimServer,
  unique,
  USER_SCHEMA,
  type Json,
  type ScimHarness,
} from './harness.ts';

/**
 * /scim/v2 driven by a SCIM library that is not Latchkey's (docs/scim-provisioning.md "What the endpoint
 * supports"). npm has no maintained SCIM 2.0 HTTP client; SCIMMY is a maintained implementation of
 * RFC 7643/7644 whose message and schema classes a client can build on: its schemas check what is sent
 * and coerce what comes back (a wrong type, a missing required attribute, an attribute of the wrong
 * shape fails there), its PatchOp builds the patch and applies it locally, giving the result the
 * server must agree with, its ListResponse reads the lists and its Filter checks that each result
 * matches the filter asked for. A small client over fetch below is what an HR system would write.
 * The same server also proves the tokens: one backend's token sees nothing of another's, a revoked
 * token is refused.
 */

// The client knows the enterprise extension, as a real one configured for it would.
SCIMMY.Schemas.User.extend(SCIMMY.Schemas.EnterpriseUser as unknown as SCIMMY.Types.Schema);

class ScimClientError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what} -> ${status} ${body.slice(0, 1000)}`);
  }
}

/** A SCIM client of the kind an HR system writes, its messages built and read by SCIMMY. */
class ScimmyClient {
  constructor(
    private readonly base: string,
    private readonly token: string,
  ) {}

  private async call(method: string, path: string, body?: unknown, expected = [200]): Promise<Json | undefined> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: {
        accept: SCIM_TYPE,
        authorization: `Bearer ${this.token}`,
        ...(body === undefined ? {} : { 'content-type': SCIM_TYPE }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const what = `${method} ${path}${body === undefined ? '' : ` ${JSON.stringify(body)}`}`;
    if (!expected.includes(res.status)) throw new ScimClientError(res.status, text, what);
    if (text && !/^application\/scim\+json/.test(res.headers.get('content-type') ?? '')) {
      throw new Error(`${what}: answered as ${res.headers.get('content-type')}, not application/scim+json`);
    }
    return text ? (JSON.parse(text) as Json) : undefined;
  }

  /** What the server answered, read through SCIMMY's schema the way a client trusts it. */
  private read(kind: 'Users' | 'Groups', body: Json): Json {
    const schema = kind === 'Users' ? SCIMMY.Schemas.User : SCIMMY.Schemas.Group;
    return JSON.parse(JSON.stringify(new schema(body, 'out'))) as Json;
  }

  async create(kind: 'Users' | 'Groups', resource: Json, password?: string): Promise<Json> {
    const schema = kind === 'Users' ? SCIMMY.Schemas.User : SCIMMY.Schemas.Group;
    // Checked against the schema before it is sent; the write-only password is added to the wire form.
    const outbound = JSON.parse(JSON.stringify(new schema(resource, 'in'))) as Json;
    delete outbound.meta;
    const answer = await this.call('POST', `/${kind}`, password ? { ...outbound, password } : outbound, [201]);
    return this.read(kind, answer!);
  }

  async get(kind: 'Users' | 'Groups', id: string): Promise<Json> {
    return this.read(kind, (await this.call('GET', `/${kind}/${id}`))!);
  }

  async list(kind: 'Users' | 'Groups', filter: string, startIndex = 1, count = 100) {
    const parsed = new SCIMMY.Types.Filter(filter);
    const q = new URLSearchParams({ filter: parsed.expression, startIndex: String(startIndex), count: String(count) });
    const answer = new SCIMMY.Messages.ListResponse((await this.call('GET', `/${kind}?${q}`)) as never);
    const resources = answer.Resources.map((r) => this.read(kind, r as Json));
    return {
      totalResults: answer.totalResults,
      startIndex: answer.startIndex,
      itemsPerPage: answer.itemsPerPage,
      resources,
      filter: parsed,
    };
  }

  /** Sends the patch and returns what SCIMMY says it should have made of `current`, for comparison. */
  async patch(kind: 'Users' | 'Groups', current: Json, operations: SCIMMY.Messages.PatchOp.PatchOpOperation[]): Promise<Json> {
    const message = new SCIMMY.Messages.PatchOp({ schemas: [SCIMMY.Messages.PatchOp.id], Operations: operations });
    await this.call('PATCH', `/${kind}/${current.id}`, { schemas: message.schemas, Operations: message.Operations }, [200, 204]);
    const schema = kind === 'Users' ? SCIMMY.Schemas.User : SCIMMY.Schemas.Group;
    const expected = await message.apply(new schema(current, 'out'), async (instance) => instance as never);
    return JSON.parse(JSON.stringify(expected)) as Json;
  }

  async delete(kind: 'Users' | 'Groups', id: string): Promise<void> {
    await this.call('DELETE', `/${kind}/${id}`, undefined, [204]);
  }
}

/** The parts of a user that both sides describe, without what the server alone keeps (meta). */
const comparable = (u: Json) => {
  const { meta: _meta, ...rest } = u;
  return rest;
};

describe('a SCIM client built on SCIMMY against /scim/v2, and the tokens (sqlite)', () => {
  let h: ScimHarness;
  let client: ScimmyClient;

  beforeAll(async () => {
    h = await startScimServer('sqlite', { backends: ['hr', 'contractors'] });
    client = new ScimmyClient(h.base, h.tokens.hr!);
  });
  afterAll(() => h?.stop());

  test('a user: create, read, list by filter, patch, delete, each answer as the schema and the patch say', async () => {
    const userName = `${unique('scimmy')}@example.org`;
    const created = await client.create(
      'Users',
      {
        schemas: [USER_SCHEMA, ENTERPRISE_SCHEMA],
        userName,
        name: { givenName: 'Grace', familyName: 'Hopper' },
        displayName: 'Grace Hopper',
        emails: [{ value: userName, type: 'work', primary: true }],
        active: true,
        [ENTERPRISE_SCHEMA]: { department: 'Navy', employeeNumber: '1906' },
      },
      'Cobol-Passw0rd-1959',
    );
    expect(created).toMatchObject({
      userName,
      name: { givenName: 'Grace', familyName: 'Hopper' },
      active: true,
      [ENTERPRISE_SCHEMA]: { department: 'Navy', employeeNumber: '1906' },
    });
    expect(typeof created.id).toBe('string');

    const read = await client.get('Users', created.id);
    expect(comparable(read)).toEqual(comparable(created));

    const listed = await client.list('Users', `userName eq "${userName}" and emails[type eq "work"].value co "@example.org"`);
    expect(listed.totalResults).toBe(1);
    expect(listed.resources.map((r) => r.id)).toEqual([created.id]);
    // Every answer really matches the filter, read by SCIMMY's own evaluation of it.
    expect(listed.filter.match(listed.resources)).toHaveLength(listed.resources.length);

    const expected = await client.patch('Users', read, [
      { op: 'replace', path: 'name.familyName', value: 'Murray Hopper' },
      { op: 'add', path: 'title', value: 'Rear Admiral' },
      { op: 'replace', path: 'emails[type eq "work"].value', value: `grace.${userName}` },
      { op: 'replace', value: { active: false } },
      { op: 'remove', path: `${ENTERPRISE_SCHEMA}:employeeNumber` },
    ]);
    const patched = await client.get('Users', created.id);
    expect(comparable(patched)).toEqual(comparable(expected));
    expect(patched).toMatchObject({ active: false, title: 'Rear Admiral', name: { familyName: 'Murray Hopper' } });
    expect(patched[ENTERPRISE_SCHEMA]).toEqual({ department: 'Navy' });

    await client.delete('Users', created.id);
    await expect(client.get('Users', created.id)).rejects.toMatchObject({ status: 404 });
    expect((await client.list('Users', `userName eq "${userName}"`)).totalResults).toBe(0);
  });

  test('a group: create, add members, read, list, remove a member, delete', async () => {
    const a = await client.create('Users', { schemas: [USER_SCHEMA], userName: unique('scimmy-a') });
    const b = await client.create('Users', { schemas: [USER_SCHEMA], userName: unique('scimmy-b') });
    const displayName = unique('Scimmy group');
    const group = await client.create('Groups', { schemas: [GROUP_SCHEMA], displayName });
    expect(group).toMatchObject({ displayName });

    const expected = await client.patch('Groups', group, [{ op: 'add', path: 'members', value: [{ value: a.id }, { value: b.id }] }]);
    const read = await client.get('Groups', group.id);
    const values = (g: Json) => ((g.members ?? []) as Json[]).map((m) => m.value).sort();
    expect(values(read)).toEqual(values(expected));
    expect(values(read)).toEqual([a.id, b.id].sort());

    const listed = await client.list('Groups', `displayName eq "${displayName}"`);
    expect(listed.resources.map((g) => g.id)).toEqual([group.id]);

    const removed = await client.patch('Groups', read, [{ op: 'remove', path: `members[value eq "${a.id}"]` }]);
    expect(values(await client.get('Groups', group.id))).toEqual(values(removed));
    expect(values(removed)).toEqual([b.id]);

    await client.delete('Groups', group.id);
    await expect(client.get('Groups', group.id)).rejects.toMatchObject({ status: 404 });
  });

  test('paging through a list with the client gives every user once', async () => {
    const p = unique('scimmy-page');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await client.create('Users', { schemas: [USER_SCHEMA], userName: `${p}-${i}` })).id);
    const seen: string[] = [];
    for (let start = 1; ; start += 3) {
      const page = await client.list('Users', `userName sw "${p}"`, start, 3);
      expect(page.totalResults).toBe(4);
      seen.push(...page.resources.map((r) => r.id));
      if (start + 3 > page.totalResults) break;
    }
    expect(seen.sort()).toEqual(ids.sort());
  });

  test("the server's User schema agrees with RFC 7643's as SCIMMY describes it", async () => {
    const answer = await h.scim('GET', `/Schemas/${USER_SCHEMA}`);
    expectStatus(answer, 200);
    const theirs = new Map((answer.body.attributes as Json[]).map((a) => [a.name as string, a]));
    const differences: string[] = [];
    // Serialised, as a server would publish it: SCIMMY's attribute objects keep their settings inside.
    const rfc = JSON.parse(JSON.stringify(SCIMMY.Schemas.User.definition.describe())) as { attributes: Json[] };
    for (const attribute of rfc.attributes) {
      const served = theirs.get(attribute.name);
      if (!served) continue; // An attribute the server does not keep is its choice (and not announced).
      for (const key of ['type', 'multiValued', 'mutability', 'returned']) {
        if (served[key] !== attribute[key]) differences.push(`${attribute.name}.${key}: RFC ${attribute[key]}, served ${served[key]}`);
      }
    }
    expect(differences).toEqual([]);
    expect(theirs.has('userName')).toBe(true);
  });

  describe('tokens', () => {
    test("a backend's token reaches only that backend's users and groups", async () => {
      const contractors = new ScimmyClient(h.base, h.tokens.contractors!);
      const userName = unique('hr-only');
      const hrUser = await client.create('Users', { schemas: [USER_SCHEMA], userName });
      const hrGroup = await client.create('Groups', { schemas: [GROUP_SCHEMA], displayName: unique('hr-group') });
      const asContractors = { token: h.tokens.contractors! };

      expectScimError(await h.scim('GET', `/Users/${hrUser.id}`, asContractors), 404);
      expectListResponse(await h.scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`, asContractors), 0);
      const all = expectListResponse(await h.scim('GET', '/Users?count=1000', asContractors));
      expect(all.map((u) => u.id)).not.toContain(hrUser.id);
      expectScimError(
        await h.scim('PATCH', `/Users/${hrUser.id}`, {
          ...asContractors,
          body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] },
        }),
        404,
      );
      expectScimError(await h.scim('PUT', `/Users/${hrUser.id}`, { ...asContractors, body: { schemas: [USER_SCHEMA], userName } }), 404);
      expectScimError(await h.scim('DELETE', `/Users/${hrUser.id}`, asContractors), 404);
      expectScimError(await h.scim('GET', `/Groups/${hrGroup.id}`, asContractors), 404);
      expectScimError(await h.scim('DELETE', `/Groups/${hrGroup.id}`, asContractors), 404);
      // Nor can it make the other backend's user a member of its own group.
      const theirGroup = await contractors.create('Groups', { schemas: [GROUP_SCHEMA], displayName: unique('contractors-group') });
      const add = await h.scim('PATCH', `/Groups/${theirGroup.id}`, {
        ...asContractors,
        body: { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: hrUser.id }] }] },
      });
      expect(add.status).toBeGreaterThanOrEqual(400);
      expect(((await contractors.get('Groups', theirGroup.id)).members ?? []).map((m: Json) => m.value)).not.toContain(hrUser.id);

      // Untouched for its own backend, which the new record also names.
      expect(await client.get('Users', hrUser.id)).toMatchObject({ userName, active: true });
      expect((await h.server.ctx.users.findByUsername('hr', userName))?.backend).toBe('hr');
    });

    test('a revoked token is refused with 401 at once; another token of the backend still works', async () => {
      const { token, id } = await h.createToken('hr', 'to be revoked');
      const first = await h.scim('GET', '/Users?count=1', { token });
      expectListResponse(first);
      const listed = await h.graphql<{ scimTokens: Array<{ id: string }> }>('{ scimTokens { id } }');
      expect(listed.scimTokens.map((t) => t.id)).toContain(id);

      await h.revokeToken(id);
      expectScimError(await h.scim('GET', '/Users?count=1', { token }), 401);
      expectScimError(await h.scim('POST', '/Users', { token, body: { schemas: [USER_SCHEMA], userName: unique('after-revoke') } }), 401);
      expectListResponse(await h.scim('GET', '/Users?count=1'));
    });

    test("no token, a wrong token, an administrator's OAuth token: 401", async () => {
      const none = await h.scim('GET', '/Users', { token: null });
      expectScimError(none, 401);
      // RFC 6750 §3: a 401 names the scheme to use.
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
      expectScimError(await h.scim('GET', '/Users', { token: `${h.tokens.hr}x` }), 401);
      const answer = await h.scim('GET', '/Users', { token: h.adminToken });
      expect([401, 403]).toContain(answer.status);
    });
  });
});
